#!/bin/sh
# Folded stacks of the bundled capture, for Brendan Gregg's flamegraph.pl (not packaged by
# Debian, PyPI or npm: get it from its repository) or any folded-stack viewer (speedscope too).
#   examples/flamegraph.sh [perf.data] > out.folded ; flamegraph.pl out.folded > out.svg
set -eu
IN=${1:-"$(dirname "$0")/compressed.data"}
deferstitch folded "$IN" --quiet
