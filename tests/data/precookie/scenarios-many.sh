DEF="--call-graph fp,defer"
cap p_task_m2_many p.data "perf record -m 2 -e cpu-clock -c 20000 $DEF -o p.data -- $W/workload_p 0.8 6"
cap p_task_m1_many p.data "perf record -m 1 -e cpu-clock -c 20000 $DEF -o p.data -- $W/workload_p 0.8 6"
