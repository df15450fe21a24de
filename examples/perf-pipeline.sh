#!/bin/sh
# Record with deferred user callchains, then stitch inside perf script and draw a flame graph:
#
#   examples/perf-pipeline.sh ./my-program args...      (needs Linux >= 6.19 and perf >= 6.19)
#
# perf script runs perf_scripts/stitch.py in perf's own Python: stacks perf merged, plus the
# samples it leaves unmerged, as folded stacks; the report of what could not be stitched goes
# to stderr. Where only an old perf is at hand, stitch first: `deferstitch stitch perf.data -o
# stitched.data` and run the same perf script command on stitched.data (perf 6.1 reads it).
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)
perf record -e cpu-clock -F 4999 --call-graph fp,defer -o perf.data -- "$@"
perf script -i perf.data -s "$HERE/perf_scripts/stitch.py" -- --folded -o out.folded --json report.json
if command -v flamegraph.pl >/dev/null 2>&1; then
  flamegraph.pl out.folded > out.svg && echo "wrote out.svg"
else
  echo "wrote out.folded (flamegraph.pl out.folded > out.svg, or open it in speedscope)"
fi
