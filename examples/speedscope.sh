#!/bin/sh
# A speedscope profile (one "sampled" profile per thread) of the bundled capture:
#   examples/speedscope.sh [perf.data] [out.json]; then open it at https://www.speedscope.app
#   or `npx speedscope out.json`.
set -eu
HERE=$(dirname "$0")
IN=${1:-"$HERE/compressed.data"}
# the capture's binary and its kernel's symbols, so that frames have names here too
SYM="--symfs $HERE/symfs --kallsyms $HERE/kallsyms.xz"
OUT=${2:-out.speedscope.json}
deferstitch export "$IN" $SYM --format speedscope -o "$OUT" --quiet
echo "wrote $OUT"
