module workload_go

go 1.19
