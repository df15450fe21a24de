# -F trace: tracepoints of several print fmts, with deferred user callchains (deferstitch script -F trace)
DEF="--call-graph fp,defer"
cap tracepoints tp.data "perf record -e sched:sched_process_exec -e sched:sched_process_fork -e sched:sched_process_exit -e sched:sched_process_free -e sched:sched_wakeup -e sched:sched_wakeup_new -e sched:sched_waking -e sched:sched_migrate_task -e irq:softirq_entry -e irq:softirq_exit $DEF -o tp.data -- $W/workload_b 0.3"
