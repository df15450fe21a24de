# offcpu scenarios: sched:sched_switch sampled with --call-graph fp,defer (user stacks deferred to
# PERF_RECORD_CALLCHAIN_DEFERRED), all with -k mono so that sample times are CLOCK_MONOTONIC like the workload's
# own wait log (waits.txt, written by workload_offcpu to its 2nd argument).
# Sourced by the rig's guest-capture.sh ($W = /opt/rig, $OUT = /out); each cap command runs in $OUT/<dir>.
DEF="--call-graph fp,defer"
cap per_task        per-task.data   "perf record -k mono -e sched:sched_switch $DEF -o per-task.data -- $W/workload_offcpu 1.5 waits.txt"
cap per_task_switch per-task.data   "perf record -k mono -e sched:sched_switch --switch-events $DEF -o per-task.data -- $W/workload_offcpu 1.5 waits.txt"
cap syswide         syswide.data    "perf record -k mono -a -e sched:sched_switch -e cpu-clock/freq=999/ $DEF -o syswide.data -- $W/workload_offcpu 1.5 waits.txt"
cap global_freq     global-freq.data "perf record -k mono -F 999 -e sched:sched_switch -e cpu-clock $DEF -o global-freq.data -- $W/workload_offcpu 1.5 waits.txt"
