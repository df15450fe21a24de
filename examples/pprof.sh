#!/bin/sh
# A pprof profile of the bundled capture, with labels thread/tid/outcome/reason:
#   examples/pprof.sh [perf.data] [out.pb.gz]; then `pprof -top out.pb.gz`,
#   `pprof -tagfocus reason=deferred-lost -top out.pb.gz` (what could not be stitched), or
#   `pprof -http=: out.pb.gz`.
set -eu
IN=${1:-"$(dirname "$0")/compressed.data"}
OUT=${2:-out.pb.gz}
deferstitch export "$IN" --format pprof -o "$OUT" --quiet
echo "wrote $OUT"
