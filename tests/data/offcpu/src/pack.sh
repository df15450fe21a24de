#!/bin/bash
# pack.sh CAPTURES DEST - copy what tests/data/offcpu carries out of a rig run ($RIG_WORK/captures): per scenario the
# data file and perf 7.2's outputs (large ones xz), the workload's waits.txt; the workload binary as the guest ran
# it (symfs/opt/rig/workload_offcpu.xz); guest-info.txt; kallsyms.xz unless ../langs/kallsyms.xz is the same
# text; SUMMARY-counts.txt (record counts and waits by kind).
set -euo pipefail
D=$1 T=$2
SCEN="per_task:per-task.data per_task_switch:per-task.data syswide:syswide.data global_freq:global-freq.data"
for sf in $SCEN; do
  s=${sf%%:*} f=${sf#*:}
  mkdir -p "$T/$s"
  for x in README evlist-v.txt header-only.txt report-stats.txt record-counts.txt record.stderr.txt record.stdout.txt \
           waits.txt script.stderr.txt; do
    [ -e "$D/$s/$x" ] && cp "$D/$s/$x" "$T/$s/"
  done
  for x in "$f" script.txt script-nomerge.txt script-fields.txt; do
    [ -e "$D/$s/$x" ] && xz -9 -T2 -c "$D/$s/$x" > "$T/$s/$x.xz"
  done
done
cp "$D/guest-info.txt" "$T/"
mkdir -p "$T/symfs/opt/rig"; xz -9 -c "$D/bin/workload_offcpu" > "$T/symfs/opt/rig/workload_offcpu.xz"
L=$(dirname "$0")/../../langs/kallsyms.xz
if [ -e "$L" ] && xz -dc "$L" | cmp -s - "$D/kallsyms"; then
  echo "kallsyms: identical to ../langs/kallsyms.xz (not copied)"; rm -f "$T/kallsyms.xz"
else xz -9 -c "$D/kallsyms" > "$T/kallsyms.xz"; echo "kallsyms: differs from ../langs/kallsyms.xz, copied"; fi
{ printf "%-16s %-17s %7s %8s %6s %12s %9s %9s %6s %9s\n" scenario file SAMPLE CALLCHAIN_DEF LOST LOST_SAMPLES SWITCH sched_sw cpu_clk bytes
  for sf in $SCEN; do
    s=${sf%%:*} f=${sf#*:}
    g() { awk -v k="$1" '$1==k && $2=="events:" {print $3; exit}' "$D/$s/report-stats.txt"; }
    printf "%-16s %-17s %7s %8s %6s %12s %9s %9s %6s %9s\n" $s $f "$(g SAMPLE)" "$(g CALLCHAIN_DEFERRED)" "$(g LOST)" \
      "$(g LOST_SAMPLES)" "$(g SWITCH)" "$(grep -c ' sched:sched_switch: ' "$D/$s/script.txt" || true)" \
      "$(grep -cE ' cpu-clock(/freq=999/)?:' "$D/$s/script.txt" || true)" "$(stat -c %s "$D/$s/$f")"
  done
  echo; echo "# waits.txt by kind: count, total ms (END_NS-START_NS)"
  for sf in $SCEN; do
    s=${sf%%:*}
    awk -v s=$s '!/^#/ {n[$2]++; t[$2]+=($4-$3)/1e6} END {printf "%-16s", s; for (k in n) printf " %s=%d/%.1fms", k, n[k], t[k]; print ""}' "$D/$s/waits.txt"
  done; } > "$T/SUMMARY-counts.txt"
du -sh "$T"
