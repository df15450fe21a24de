#!/bin/bash
# pack.sh CAPTURES ROOTFS DEST - copy what tests/data/langs carries out of a rig run ($RIG_WORK/captures) and its
# rootfs ($RIG_WORK/rootfs, the guest userland): per-scenario perf outputs (large ones xz), map and dump files,
# and symfs/: every file perf 7.2 named as a dso in script-fields*.txt, at its guest path, xz
# (/opt/rig workloads as built; jitted-*.so as perf inject wrote them; system files through keep_symbols.py).
set -euo pipefail
D=$1 ROOT=$2 T=$3
KS=$(dirname "$0")/../../names/keep_symbols.py
mkdir -p "$T/symfs"
for s in cpp rust_legacy rust_v0 go node_perf_map node_jitdump node_jitdump_inject java; do
  mkdir -p "$T/$s"
  for f in README evlist-v.txt header-only.txt report-stats.txt record-counts.txt record.stderr.txt record.stdout.txt \
           script-fields-injected.stderr.txt inject.stderr.txt "$D/$s"/perf-*.map; do
    f=$D/$s/$(basename "$f"); [ -e "$f" ] && cp "$f" "$T/$s/"
  done
  for f in per-task.data injected.data script.txt script-fields.txt script-fields-injected.txt "$D/$s"/jit-*.dump; do
    f=$D/$s/$(basename "$f"); [ -e "$f" ] && xz -9 -T2 -c "$f" > "$T/$s/$(basename "$f").xz"
  done
done
cp "$D/guest-info.txt" "$D/runtime-versions.txt" "$D/vdso.so" "$T/"
xz -9 -c "$D/kallsyms" > "$T/kallsyms.xz"
# SUMMARY-counts.txt from per-task.data of every scenario (the rig's summary.sh takes the first *.data)
{ printf "%-22s %-16s %8s %10s %6s %12s %10s\n" scenario file SAMPLE CALLCHAIN_DEF LOST LOST_SAMPLES bytes
  for s in cpp rust_legacy rust_v0 go node_perf_map node_jitdump node_jitdump_inject java; do
    g() { awk -v k="$1" '$1==k && $2=="events:" {print $3; exit}' "$D/$s/report-stats.txt"; }
    printf "%-22s %-16s %8s %10s %6s %12s %10s\n" $s per-task.data "$(g SAMPLE)" "$(g CALLCHAIN_DEFERRED)" \
      "$(g LOST)" "$(g LOST_SAMPLES)" "$(stat -c %s "$D/$s/per-task.data")"
  done; } > "$T/SUMMARY-counts.txt"
# symfs
cat "$D"/*/script-fields.txt "$D"/node_jitdump_inject/script-fields-injected.txt |
  grep -oE '\(/[^()]*\)$' | tr -d '()' | sort -u | grep -v '^/tmp/perf-' > "$T/dsos.txt"
while read -r p; do
  mkdir -p "$T/symfs$(dirname "$p")"
  case $p in
    /opt/rig/*) xz -9 -c "$D/bin/$(basename "$p")" > "$T/symfs$p.xz" ;;
    /out/*) xz -9 -c "$D/${p#/out/}" > "$T/symfs$p.xz" ;;
    *) real=$(chroot "$ROOT" readlink -f "$p"); [ "$real" = "$p" ] || echo "note: $p -> $real" >&2
       python3 "$KS" "$ROOT$real" /tmp/ks.tmp && xz -9 -T2 -c /tmp/ks.tmp > "$T/symfs$p.xz"; rm -f /tmp/ks.tmp ;;
  esac
done < "$T/dsos.txt"
du -sh "$T"
