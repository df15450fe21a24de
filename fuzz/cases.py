"""One fuzz case: input bytes -> our pipeline, and the invariants every input must keep.

    trace_case(data)    a trace.dat through libtracecmd, the bridge and the ftrace reader
    perf_case(data)     a perf.data through the C engine and the Python path: equal reports

An input ends either in a report whose counts add up (samples == stitched + passed +
sum(unmatched)) or in a DeferstitchError: one line naming the file. Anything else raises
(AssertionError, or the stray exception itself) and the harness saves the input; a crash in C
(ours or libtracecmd's) is caught by libFuzzer, which saves it too. Shared by fuzz_trace.py,
engine_fuzz.c and tests/test_fuzz_harness.py.
"""
import atexit
import os
import shutil
import tempfile

from deferstitch.errors import DeferstitchError, FormatError

_TMP = tempfile.mkdtemp(prefix="deferstitch-case-")
atexit.register(shutil.rmtree, _TMP, True)


def _write(data, name):
    path = os.path.join(_TMP, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def _one_line(err, path):
    msg = str(err)
    assert "\n" not in msg and msg.startswith(path), "not one line naming the file: %r" % msg


def trace_case(data):
    """A trace.dat: the bridge and the reader end in a conserved report or a one-line error."""
    from deferstitch.tracecmd.bridge import Trace
    from deferstitch.tracecmd.reader import FtraceFeed
    path = _write(data, "case.dat")
    try:
        trace = Trace(path)
    except DeferstitchError as err:
        _one_line(err, path)
        return None
    with trace:
        feed = FtraceFeed(**trace.feed_args())      # peeks at the CPUs as the CLI does
        try:
            for ev in trace:
                feed.event(ev)
                ev.fields()                 # every field of every event decodes
        except DeferstitchError as err:
            _one_line(err, path)
        rep = feed.finish()
    assert rep.conserved(), rep.to_json()
    return rep


def perf_case(data, max_pending=1000):
    """A perf.data: the engine's report equals the Python path's, and where the input is damaged
    both stop with the same one-line error after the same counts (the engine decodes what it
    does not walk with the Python decoders, in one pass)."""
    from deferstitch.perfdata import engine
    from deferstitch.perfdata.feed import PerfFeed
    from deferstitch.pipeline import Null
    from deferstitch.perfdata.reader import PerfData
    path = _write(data, "case.data")
    try:
        perf = PerfData.open(path)
    except DeferstitchError as err:
        _one_line(err, path)
        return None
    with perf:
        feed = PerfFeed(perf, Null(), max_pending=max_pending)
        try:
            py = feed.run()
            py_err = None
        except DeferstitchError as err:
            _one_line(err, path)
            py, py_err = feed.report, err
        assert py.conserved(), py.to_json()
    if not engine.available():
        return py
    with PerfData.open(path) as perf:
        if engine.unavailable(perf) is not None:
            return py
        run = engine.EngineRun(perf, engine.MODE_NONE, max_pending)
        c_err = None
        try:
            for _chunk in run.chunks():
                pass
        except FormatError as err:
            c_err = err
        except DeferstitchError:            # a limit of the engine's, not damage: Python answers
            return py
        c = run.report()
        if c_err is not None:
            c.error = str(c_err)
    assert str(c_err) == str(py_err), "the engine and Python stop differently: %s / %s" % (c_err, py_err)
    assert c.to_json() == py.to_json(), "engine and Python reports differ:\n%s\n%s" % (
        c.to_json(), py.to_json())
    return py
