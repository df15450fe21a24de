"""``report`` and ``trace report`` on damaged input: the tables or the JSON of
what was read before the damage, marked incomplete with where it stopped, then the one-line
error and exit status 2 — as folded, script and stitch already write their good part."""
import json
import os

import pytest

from conftest import CAPTURES, capture, run_cli
from tracecmd_text import need_libtracecmd
from deferstitch.abi import consts as C
from deferstitch.errors import FormatError
from deferstitch.perfdata.reader import PerfData
from deferstitch.tracecmd import cli as trace_cli
from deferstitch.tracecmd.reader import FtraceFeed


def good_samples(path):
    """SAMPLE records the reader yields before the file's damage, and that damage."""
    n = 0
    with PerfData.open(str(path)) as p:
        try:
            for rec in p.records():
                n += rec.type == C.PERF_RECORD_SAMPLE
        except FormatError as err:
            return n, err
    return n, None


def report(path, *args, accel="1", **kw):
    return run_cli("report", path, *args, env={**os.environ, "DEFERSTITCH_ACCEL": accel}, **kw)


def check_incomplete(p, samples, err):
    assert p.returncode == 2, p.stderr
    lines = p.stderr.decode().splitlines()
    assert lines == ["deferstitch: %s" % err], lines        # the error, one line, as before
    d = json.loads(p.stdout)
    assert d["complete"] is False and d["error"] == str(err)
    assert d["conserved"] and d["samples"] == samples
    return d


@pytest.mark.parametrize("accel", ["1", "0"])
def test_cut_capture_reports_what_was_read(tmp_path, accel):
    path, _ = capture("b_per_task")
    raw = path.read_bytes()
    cut = tmp_path / "cut.data"
    cut.write_bytes(raw[:len(raw) // 2])
    samples, err = good_samples(cut)
    assert err is not None and samples > 0
    d = check_incomplete(report(cut, "--json", accel=accel), samples, err)
    assert sum(d["perf"]["records"].values()) > samples
    text = report(cut, accel=accel)
    assert text.returncode == 2
    out = text.stdout.decode()
    assert "INCOMPLETE: the input stopped at %s" % err in out
    assert "stitched" in out and "COUNTS DO NOT ADD UP" not in out


def test_pipe_file_with_perf_stderr_appended(tmp_path):
    """perf record -o - ... > f 2>&1: perf's own messages end up after the last record."""
    path, _ = capture("pipe")
    whole = json.loads(report(path, "--json").stdout)
    junk = tmp_path / "pipe.data"
    junk.write_bytes(path.read_bytes() + b"[ perf record: Woken up 1 times to write data ]\n")
    samples, err = good_samples(junk)
    assert samples == whole["samples"] and err is not None
    d = check_incomplete(report(junk, "--json"), samples, err)
    assert {k: d[k] for k in ("stitched", "passed", "unmatched")} == \
        {k: whole[k] for k in ("stitched", "passed", "unmatched")}
    with open(junk, "rb") as f:                             # standard input: the same
        p = run_cli("report", "-", "--json", stdin=f)
    assert p.returncode == 2 and json.loads(p.stdout)["samples"] == samples
    assert p.stderr.decode().count("\n") == 1 and "<stdin>: offset 0x" in p.stderr.decode()


def test_stitched_file_carries_the_incomplete_report(tmp_path):
    path, _ = capture("a_per_task")
    raw = path.read_bytes()
    cut = tmp_path / "cut.data"
    cut.write_bytes(raw[:len(raw) // 3])
    samples, err = good_samples(cut)
    p = run_cli("stitch", cut, "-o", tmp_path / "st.data", "-q")
    assert p.returncode == 2 and "offset 0x" in p.stderr.decode()
    with PerfData.open(str(tmp_path / "st.data")) as st:
        saved = json.loads(bytes(st.features[250]).decode())
    assert saved["complete"] is False and saved["error"] == str(err) and saved["samples"] == samples


def test_trace_report_of_a_trace_stopped_by_damage():
    """The trace side: at a FormatError inside the events, the feed finishes what it read and
    the report says where it stopped. libtracecmd itself stops quietly at a cut file, so the
    damage is put into the real capture's event stream after half of its events."""
    real = CAPTURES / "ftrace" / "trace-userstacktrace.dat"
    need_libtracecmd()
    from deferstitch.tracecmd.bridge import Trace
    with Trace(str(real)) as trace:
        events = list(trace)

    def damaged():
        yield from events[:len(events) // 2]
        raise FormatError(str(real), 0x1234, "made-up damage")
    feed = FtraceFeed(long_size=8)
    err = trace_cli._feed(feed, trace, damaged())
    assert isinstance(err, FormatError)
    rep = feed.report
    assert rep.error == str(err) and rep.conserved() and 0 < rep.samples < len(events) // 2 + 1
    d = rep.to_json()
    assert d["complete"] is False and d["ftrace"]["events"]
