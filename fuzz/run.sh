#!/bin/bash
# Usage: fuzz/run.sh SECONDS TARGET [ARGS...]
# Run a libFuzzer target (atheris or native) for SECONDS in all, starting it again after each
# crash: libFuzzer stops at the first one, and its -fork mode does not work under atheris.
# The target saves each crash under its -artifact_prefix; the corpus directory carries over.
set -u
seconds=$1; shift
end=$(( $(date +%s) + seconds ))
runs=0
while :; do
  left=$(( end - $(date +%s) ))
  [ "$left" -gt 0 ] || break
  "$@" -max_total_time="$left"
  rc=$?
  runs=$((runs + 1))
  [ "$rc" -eq 0 ] && break                 # time is up with no new crash
  [ "$runs" -ge 200 ] && { echo "fuzz/run.sh: 200 crashes, stopping" >&2; break; }
done
exit 0
