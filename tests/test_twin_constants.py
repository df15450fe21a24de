"""The numbers the C twins share with the Python modules (deferstitch/_twin.h): the outcome keys
in model.OUTCOME_KEYS order, report.KEEP_FIRST, the engines' modes, the perf.data record types
(abi/consts.py) and tracecmd/reader.py's MAX_NEST. Each C module exports them; a reason added
on one side only, or a mode renumbered, fails here before any capture has to exercise it."""
import importlib

import pytest

from conftest import need_built

from deferstitch import model, report
from deferstitch.perfdata import engine as perf_engine
from deferstitch.tracecmd import engine as trace_engine

PERF_MODES = ("MODE_FILE", "MODE_EVENTS", "MODE_NONE", "MODE_ORDERED", "MODE_COUNTED", "MODE_CHAINS",
              "MODE_OUTCOMES")
TRACE_MODES = ("MODE_NONE", "MODE_SAMPLES", "MODE_RESOLVED")


def _module(name):
    try:
        return importlib.import_module("deferstitch." + name)
    except ImportError:
        need_built({"_accel": "the C engine (deferstitch._accel)",
                    "_tracedat": "the page reader (deferstitch._tracedat)"}[name], False)


@pytest.mark.parametrize("name", ["_accel", "_tracedat"])
def test_outcome_keys_and_keep_first(name):
    c = _module(name)
    assert c.OUTCOME_KEYS == model.OUTCOME_KEYS
    assert c.OUTCOME_KEYS == (model.STITCHED, model.PASSED) + model.REASONS
    assert c.KEEP_FIRST == report.KEEP_FIRST
    assert perf_engine.KEYS == c.OUTCOME_KEYS


def test_perf_engine_modes():
    c = _module("_accel")
    for m in PERF_MODES:
        assert getattr(perf_engine, m) == getattr(c, m), m
    assert len({getattr(c, m) for m in PERF_MODES}) == len(PERF_MODES)


def test_trace_feed_modes():
    c = _module("_tracedat")
    for m in TRACE_MODES:
        assert getattr(trace_engine, m) == getattr(c, "FEED_" + m), m
    assert len({getattr(c, "FEED_" + m) for m in TRACE_MODES}) == len(TRACE_MODES)


@pytest.mark.parametrize("name", ["_accel", "_tracedat"])
def test_record_types_and_max_nest(name):
    """_accel.c's record types are abi/consts.py's numbers; MAX_NEST is tracecmd/reader.py's."""
    from deferstitch.abi import consts
    from deferstitch.tracecmd import reader
    c = _module(name)
    assert c.MAX_NEST == reader.MAX_NEST
    assert c.RECORD_TYPES and all(getattr(consts, "PERF_RECORD_" + k) == v
                                  for k, v in c.RECORD_TYPES.items()), c.RECORD_TYPES
