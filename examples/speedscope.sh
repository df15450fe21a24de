#!/bin/sh
# A speedscope profile (one "sampled" profile per thread) of the bundled capture:
#   examples/speedscope.sh [perf.data] [out.json]; then open it at https://www.speedscope.app
#   or `npx speedscope out.json`.
set -eu
IN=${1:-"$(dirname "$0")/compressed.data"}
OUT=${2:-out.speedscope.json}
deferstitch export "$IN" --format speedscope -o "$OUT" --quiet
echo "wrote $OUT"
