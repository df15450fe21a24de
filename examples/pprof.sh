#!/bin/sh
# A pprof profile of the bundled capture, with labels thread/tid/outcome/reason:
#   examples/pprof.sh [perf.data] [out.pb.gz]; then `pprof -top out.pb.gz`,
#   `pprof -tagfocus reason=deferred-lost -top out.pb.gz` (what could not be stitched), or
#   `pprof -http=: out.pb.gz`.
set -eu
HERE=$(dirname "$0")
IN=${1:-"$HERE/compressed.data"}
# the capture's binary and its kernel's symbols, so that frames have names here too
SYM="--symfs $HERE/symfs --kallsyms $HERE/kallsyms.xz"
OUT=${2:-out.pb.gz}
deferstitch export "$IN" $SYM --format pprof -o "$OUT" --quiet
echo "wrote $OUT"
