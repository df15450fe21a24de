# libc_dbg scenarios: a multi-threaded C program in glibc's own code (syscalls through
# __syscall_cancel_arch; strdup/puts/snprintf calling memcpy and strlen through libc's IRELATIVE PLT
# slots), recorded with libc6-dbg installed (RIG_EXTRA_PKGS=libc6-dbg). Sourced by the rig's
# guest-capture.sh ($W = /opt/rig, $OUT = /out); post() then writes script.txt etc. with the debug files.
# Besides: perf script --no-inline with the debug files (script-noinline.txt) and without them
# (script-noinline-nodebug.txt: /usr/lib/debug moved aside, an empty build-id cache).
DEF="--call-graph fp,defer"
NODEBUG="mv /usr/lib/debug /usr/lib/debug.off && perf script --no-inline --buildid-dir /tmp/nobid -i per-task.data > script-noinline-nodebug.txt 2> script-noinline-nodebug.stderr.txt; mv /usr/lib/debug.off /usr/lib/debug"
WHICH="{ readelf -n /usr/lib/x86_64-linux-gnu/libc.so.6 | grep 'Build ID'; ls -l /usr/lib/debug/.build-id/*/*.debug | head -50; dpkg -l libc6 libc6-dbg | tail -2; } > debug-files.txt 2>&1"
cap libc per-task.data "perf record -e cpu-clock -F 1999 $DEF -o per-task.data -- $W/workload_libc 1.5; perf script --no-inline -i per-task.data > script-noinline.txt 2> script-noinline.stderr.txt; $NODEBUG; $WHICH"
