"""The engine-facing interface (output/sink.py): every output declares what it takes, and the
method the engine calls for that kind takes the record's fields, in their order, by their names,
so that the one list in sink.py and the C engine's tuples cannot drift apart unseen."""
import importlib
import inspect
import pkgutil

import deferstitch.output as output_pkg
from deferstitch import pipeline
from deferstitch.output import sink as S
from deferstitch.perfdata import engine


def outputs():
    """Every Sink subclass of deferstitch.output and pipeline.Null."""
    for mod in pkgutil.iter_modules(output_pkg.__path__):
        importlib.import_module("deferstitch.output." + mod.name)
    found, todo = set(), [S.Sink]
    while todo:
        for cls in todo.pop().__subclasses__():
            if cls not in found:
                found.add(cls)
                todo.append(cls)
    return sorted(found, key=lambda c: c.__qualname__)


def test_every_output_declares_a_kind_the_pipeline_knows():
    outs = outputs()
    assert pipeline.Null in outs and len(outs) >= 9, outs
    for cls in outs:
        assert cls.takes is None or cls.takes in pipeline.MODES, cls


def test_each_kind_is_one_engine_mode():
    assert sorted(pipeline.MODES.values()) == sorted(
        (engine.MODE_NONE, engine.MODE_FILE, engine.MODE_EVENTS, engine.MODE_ORDERED,
         engine.MODE_COUNTED, engine.MODE_CHAINS, engine.MODE_OUTCOMES))


def test_the_engines_methods_take_the_records_fields_by_name():
    checked = 0
    for cls in outputs():
        if cls.takes not in S.RECORD_OF:
            continue
        record, method = S.RECORD_OF[cls.takes]
        params = list(inspect.signature(getattr(cls, method)).parameters)[1:]
        assert [p.lstrip("_") for p in params] == list(record._fields), (cls, method, params)
        if cls.takes == S.ORDERED:
            assert callable(getattr(cls, "turn", None)), cls
        checked += 1
    assert checked >= 6


def test_each_engine_output_writes_the_calls_of_its_kind():
    """Sink's stubs do nothing: an output the engine feeds must write its own method (and
    ORDERED its turn()), or the engine's samples would vanish unseen."""
    for cls in outputs():
        if cls.takes in S.RECORD_OF:
            method = S.RECORD_OF[cls.takes][1]
            assert getattr(cls, method) is not getattr(S.Sink, method), (cls, method)
        if cls.takes == S.ORDERED:
            assert cls.turn is not S.Sink.turn, cls


def test_every_call_of_a_run_has_its_default_in_sink(monkeypatch):
    """The calls pipeline.py, the perf feed and the trace side make on an output are Sink's
    methods: an output that writes only sample() runs through a whole input on either path."""
    import argparse
    import re
    from pathlib import Path

    from conftest import capture

    from deferstitch.stitcher import DEFAULT_MAX_PENDING

    root = Path(pipeline.__file__).parent
    called = set()
    for rel in ("pipeline.py", "perfdata/feed.py", "tracecmd/cli.py"):
        text = (root / rel).read_text()
        called |= {a or b for a, b in re.findall(r'\bout\.(\w+)|getattr\(out, "(\w+)"', text)}
    written = {name for cls in outputs() for name, v in vars(cls).items()
               if callable(v) and not name.startswith("_")}
    calls = called & written        # (out.writer, out.report, ...: attributes, not calls)
    assert {"resolved", "record", "sample", "named", "close", "turn", "resolved_ips",
            "resolved_counted", "outcome"} <= calls, calls
    for name in calls:
        assert callable(getattr(S.Sink, name, None)), name

    class Samples(S.Sink):
        def __init__(self):
            self.n = 0

        def sample(self, s):
            self.n += 1

    path, _folder = capture("b_per_task")
    args = argparse.Namespace(input=str(path), quiet=True, max_pending=DEFAULT_MAX_PENDING,
                              no_symbols=True, kallsyms=None, symfs=None, buildid_dir=None)
    monkeypatch.delenv("DEFERSTITCH_ACCEL", raising=False)    # (takes None: the Python path)
    rep, out = pipeline.run(args, lambda _perf, _ctx: Samples(), symbols=True)
    assert out.n == rep.samples > 0
