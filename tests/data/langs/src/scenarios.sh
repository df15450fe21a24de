# langs scenarios: C++, Rust (legacy and v0 mangling), Go, Node.js (perf map, jitdump, jitdump + perf inject)
# and Java (perf map) programs entering the kernel with short syscalls, recorded with --call-graph fp,defer.
# Sourced by the rig's guest-capture.sh ($W = /opt/rig: the host-built binaries, prog.js and Prog*.class
# come from EXTRA_OPT; $OUT = /out). Each cap command runs in $OUT/<dir>; guest-capture.sh's post() then runs
# perf script etc. right after it, while /tmp/perf-*.map (and the jit dump in the capture dir) are in place.
DEF="--call-graph fp,defer"
mkdir -p $W/py
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
{ echo "# node --version"; node --version; echo "# java -version"; java -version 2>&1
  echo "# readlink -f \$(which node java)"; readlink -f $(which node) $(which java)
  echo "# addr2line --version"; addr2line --version | head -1; } > $OUT/runtime-versions.txt 2>&1
cat > $W/py/inject.sh <<'SHEOF'
# perf inject --jit (fp-only capture: perf inject drops CALLCHAIN_DEFERRED), then perf 7.2's perf script on the
# result; the jitted-PID-N.so files it writes are listed (jitted-so.txt) and copied here under jitted-found/ if
# written outside this directory.
perf inject --jit -i per-task.data -o injected.data > inject.stderr.txt 2>&1
perf script -i injected.data -F comm,tid,time,ip,sym,dso > script-fields-injected.txt 2> script-fields-injected.stderr.txt
perf script -i injected.data > script-injected.txt 2> /dev/null
find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o -name 'jitted-*.so' -print > jitted-so.txt
grep -v "^$PWD/" jitted-so.txt | while read -r f; do mkdir -p "jitted-found$(dirname "$f")"; cp "$f" "jitted-found$f"; done
ls | head -20; wc -l jitted-so.txt
SHEOF
CLEAN="rm -f /tmp/perf-*.map /tmp/jit-*.dump"
KEEP="cp /tmp/perf-*.map /tmp/jit-*.dump . 2>/dev/null; ls -l"
JAVA="java -XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -cp $W Prog"
cap cpp          per-task.data "perf record -e cpu-clock -F 1999 $DEF -o per-task.data -- $W/workload_cpp 1"
cap rust_legacy  per-task.data "perf record -e cpu-clock -F 1999 $DEF -o per-task.data -- $W/workload_rust_legacy 1"
cap rust_v0      per-task.data "perf record -e cpu-clock -F 1999 $DEF -o per-task.data -- $W/workload_rust_v0 1"
cap go           per-task.data "perf record -e cpu-clock -F 1999 $DEF -o per-task.data -- $W/workload_go 1"
cap node_perf_map per-task.data "$CLEAN; perf record -e cpu-clock -F 999 $DEF -o per-task.data -- node --perf-basic-prof $W/prog.js 1; $KEEP"
cap node_jitdump per-task.data "$CLEAN; perf record -k 1 -e cpu-clock -F 999 $DEF -o per-task.data -- node --perf-prof --interpreted-frames-native-stack $W/prog.js 1; $KEEP"
cap node_jitdump_inject per-task.data "$CLEAN; perf record -k 1 -e cpu-clock -F 999 --call-graph fp -o per-task.data -- node --perf-prof --interpreted-frames-native-stack $W/prog.js 1; $KEEP; bash $W/py/inject.sh"
cap java         per-task.data "$CLEAN; perf record -e cpu-clock -F 499 $DEF -o per-task.data -- $JAVA 1.5; $KEEP"
