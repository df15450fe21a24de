#!/bin/sh
# The pictures of the bundled capture: an interactive flame graph and the report as a page.
# Both are single files that load nothing; open them in any browser.
#   examples/pictures.sh [perf.data] [OUTDIR]
set -eu
HERE=$(dirname "$0")
IN=${1:-"$HERE/compressed.data"}
OUT=${2:-.}
# the capture's binary and its kernel's symbols, so that frames have names here too
SYM="--symfs $HERE/symfs --kallsyms $HERE/kallsyms.xz"
deferstitch flamegraph "$IN" $SYM --quiet -o "$OUT/flamegraph.html"
deferstitch flamegraph "$IN" $SYM --quiet --inverted -o "$OUT/icicle.svg"
deferstitch report "$IN" --quiet --html "$OUT/report.html" > /dev/null
echo "wrote $OUT/flamegraph.html $OUT/icicle.svg $OUT/report.html"
