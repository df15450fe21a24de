#!/bin/sh
# Remake the trace.dat v7 files here from tests/tracecmd_synth.py's v6 ones, with trace-cmd 3.4
# (tools/sid-run, as root): run from the repository's top directory.
set -eu
dir=tests/data/tracecmd-v7
tmp=$(mktemp -d ./v7.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
python3 -c "import sys; sys.path.insert(0, 'tests'); import tracecmd_synth as S; \
S.big('$tmp/big.dat', 0.3); S.instances('$tmp/instances.dat')"
for f in big instances; do
  for z in zstd zlib; do
    tools/sid-run trace-cmd convert -i "$tmp/$f.dat" -o "$tmp/$f-$z.dat" --file-version 7 --compression $z
    cp "$tmp/$f-$z.dat" "$dir/$f-$z.dat"
  done
done
