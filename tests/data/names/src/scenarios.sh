# names scenarios: run-time generated code named by /tmp/perf-PID.map, python3.14 -X perf (map file) and
# -X perf_jit (jitdump). Sourced by the rig's guest-capture.sh ($W = /opt/rig, $OUT = /out).
DEF="--call-graph fp,defer"
mkdir -p $W/py
cat > $W/py/pyprog.py <<'PYEOF'
"""Nested Python functions entering the kernel with short syscalls (for python3 -X perf / -X perf_jit)."""
import os
import sys
import time


def leaf_ppid():
    return os.getppid()


def leaf_stat():
    return os.stat("/").st_mode


def middle(n):
    total = 0
    for _ in range(n):
        total += leaf_ppid()
    return total


def branch_a():
    return middle(20) + leaf_stat()


def branch_b():
    return [leaf_stat() for _ in range(10)]


def outer(seconds):
    end = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < end:
        branch_a()
        branch_b()
        rounds += 1
    return rounds


if __name__ == "__main__":
    print("pyprog:", outer(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0))
PYEOF
cat > $W/py/vdso_dump.py <<'PYEOF'
"""Write this process's [vdso] image (the running kernel's) to the file named by argv[1]."""
import sys
with open("/proc/self/maps") as f:
    line = next(l for l in f if l.rstrip().endswith("[vdso]"))
start, end = (int(x, 16) for x in line.split()[0].split("-"))
with open("/proc/self/mem", "rb") as mem:
    mem.seek(start)
    image = mem.read(end - start)
with open(sys.argv[1], "wb") as out:
    out.write(image)
PYEOF
python3 $W/py/vdso_dump.py $OUT/vdso.so; ls -l $OUT/vdso.so
python3.14 -VV > $OUT/python-version.txt 2>&1
CLEAN="rm -f /tmp/perf-*.map /tmp/jit-*.dump"
KEEP="cp /tmp/perf-*.map /tmp/jit-*.dump . 2>/dev/null; ls -l"
cap jit_map per-task.data "$CLEAN; perf record -e cpu-clock -F 1999 $DEF -o per-task.data -- $W/workload_jit 1; $KEEP"
cap py_perf per-task.data "$CLEAN; cp $W/py/pyprog.py .; perf record -e cpu-clock -F 1999 $DEF -o per-task.data -- python3.14 -X perf $W/py/pyprog.py 1; $KEEP"
cap py_perf_jit per-task.data "$CLEAN; cp $W/py/pyprog.py .; perf record -k 1 -e cpu-clock -F 1999 $DEF -o per-task.data -- python3.14 -X perf_jit $W/py/pyprog.py 1; $KEEP; perf inject --jit -i per-task.data -o injected.data > inject.stderr.txt 2>&1; perf script -i injected.data -F comm,tid,time,ip,sym,dso > script-fields-injected.txt 2>script-fields-injected.stderr.txt; rm -f injected.data"
