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
