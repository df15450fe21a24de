# perf script -s perf_scripts/stitch.py — whole stacks from deferred user callchains, and a
# report of every sample that could not be stitched, inside perf's own Python.
#
# Usage:
#   perf script -i perf.data -s perf_scripts/stitch.py                  stitched samples, report on stderr
#   perf script -i perf.data -s perf_scripts/stitch.py -- --folded      FlameGraph folded stacks
#   perf script -i perf.data -s perf_scripts/stitch.py -- --report --json report.json
#   perf script -i perf.data --no-merge-callchains -s perf_scripts/stitch.py -- -o out.txt
#
# Thin on purpose: the work is in deferstitch.perfplugin (found next to this file, or installed).
import os
import sys

_here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.path.isdir(os.path.join(_here, "deferstitch")):
    sys.path.insert(0, _here)

_plugin = None


def _fail(msg):
    sys.stderr.write("stitch.py: %s\n" % msg)
    sys.stderr.flush()
    atomic = sys.modules.get("deferstitch.output.atomic")
    if atomic is not None:
        atomic.rollback_all()   # os._exit skips atexit: no half-written temporary stays
    os._exit(2)          # perf would print a traceback for an exception: one line instead


def _guard(func, *args):
    """Run a plugin step; any failure is one line and exit status 2 (DEFERSTITCH_DEBUG=1: raise)."""
    try:
        return func(*args)
    except Exception as err:
        if os.environ.get("DEFERSTITCH_DEBUG"):
            raise
        from deferstitch.errors import DeferstitchError
        _fail(str(err) if isinstance(err, DeferstitchError) else
              "internal error: %s: %s (DEFERSTITCH_DEBUG=1 shows where)" % (type(err).__name__, err))


def trace_begin():
    global _plugin
    try:
        from deferstitch.perfplugin import Plugin
    except ImportError as err:
        _fail("cannot import deferstitch (%s): keep perf_scripts/ next to deferstitch/, or "
              "pip install deferstitch for %s" % (err, sys.executable or "perf's python3"))
    _plugin = _guard(Plugin)


def process_event(param_dict):
    _guard(_plugin.event, param_dict)


def trace_unhandled(event_name, context, event_fields_dict, perf_sample_dict=None):
    if perf_sample_dict is not None:
        _guard(_plugin.event, perf_sample_dict)


def trace_end():
    _guard(_plugin.finish)
