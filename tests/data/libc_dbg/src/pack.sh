#!/bin/bash
# pack.sh CAPTURES ROOTFS DEST - copy what tests/data/libc_dbg carries out of a rig run ($RIG_WORK/captures)
# and its rootfs ($RIG_WORK/rootfs, the guest userland with libc6-dbg): the capture's perf outputs (large ones
# xz), and symfs/: every file perf named a frame from, at its guest path, xz (the workload as built; libc.so.6,
# ld-linux-x86-64.so.2 and their debug files through ../names/keep_symbols.py: symbol tables, PLT and
# relocations kept, every other section zeroed, DWARF included).
set -euo pipefail
D=$1 ROOT=$2 T=$3
KS=$(dirname "$0")/../../names/keep_symbols.py
mkdir -p "$T/libc" "$T/symfs"
for f in README evlist-v.txt header-only.txt report-stats.txt record-counts.txt record.stderr.txt debug-files.txt; do
  cp "$D/libc/$f" "$T/libc/"
done
for f in per-task.data script.txt script-noinline.txt; do xz -9 -c "$D/libc/$f" > "$T/libc/$f.xz"; done
cp "$D/guest-info.txt" "$D/SUMMARY-counts.txt" "$T/"     # the kernel frames: ../langs/kallsyms.xz (same build)
mkdir -p "$T/symfs/opt/rig"; xz -9 -c "$D/bin/workload_libc" > "$T/symfs/opt/rig/workload_libc.xz"
dbg() { local id; id=$(readelf -n "$ROOT$1" | awk '/Build ID/ {print $3}'); echo "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"; }
LIBC=/usr/lib/x86_64-linux-gnu/libc.so.6 LDSO=/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
for p in $LIBC $LDSO $(dbg $LIBC) $(dbg $LDSO); do
  mkdir -p "$T/symfs$(dirname "$p")"
  python3 "$KS" "$ROOT$p" /tmp/ks.tmp && xz -9 -T2 -c /tmp/ks.tmp > "$T/symfs$p.xz"; rm -f /tmp/ks.tmp
done
du -sh "$T"
