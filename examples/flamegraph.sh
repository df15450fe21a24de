#!/bin/sh
# Folded stacks of the bundled capture, for Brendan Gregg's flamegraph.pl (not packaged by
# Debian, PyPI or npm: get it from its repository) or any folded-stack viewer (speedscope too).
#   examples/flamegraph.sh [perf.data] > out.folded ; flamegraph.pl out.folded > out.svg
set -eu
HERE=$(dirname "$0")
IN=${1:-"$HERE/compressed.data"}
# the capture's binary and its kernel's symbols, so that frames have names here too
SYM="--symfs $HERE/symfs --kallsyms $HERE/kallsyms.xz"
deferstitch folded "$IN" $SYM --quiet
