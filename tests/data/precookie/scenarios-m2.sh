DEF="--call-graph fp,defer"
cap p_task_m2_8p p.data "perf record -m 2 -e cpu-clock -c 20000 $DEF -o p.data -- $W/workload_p 1.0 8"
cap p_task_m2_long p.data "perf record -m 2 -e cpu-clock -c 20000 $DEF -o p.data -- $W/workload_p 1.5 5"
