"""PERF_SAMPLE_READ: one sample per group member, with its event and period, as perf shows them.

perf (session.c, deliver_sample_group / deliver_sample_value) delivers a group read once per
member: that member's event, period = its value minus the last value of its id (per thread when
the attr has inherit and TID), nothing for a zero period or an unknown id. Checked against
perf 7.2's own output on hotspot's real `{cycles,instructions}:S` recording, and on files built
by tests/synth.py against hand-computed periods and the real perf (6.1, and 7.2 through the rig).
"""
import json
import shutil
import subprocess

import pytest

from conftest import DATA, SHARED, need_perf61, need_sid_perf, run_cli
from perf_text import parse_fields
from synth import Synth, make_attr

from deferstitch.abi import consts as C
from deferstitch.perfdata.reader import PerfData

FORMAT_LOST = SHARED / "external" / "hotspot" / "perf.data.PerfFormatLost"
PERF72_TEXT = DATA / "external" / "PerfFormatLost.perf72.txt"

ST = (C.PERF_SAMPLE_IP | C.PERF_SAMPLE_TID | C.PERF_SAMPLE_TIME | C.PERF_SAMPLE_ID
      | C.PERF_SAMPLE_PERIOD | C.PERF_SAMPLE_READ | C.PERF_SAMPLE_CALLCHAIN)
GROUP = C.PERF_FORMAT_GROUP | C.PERF_FORMAT_ID | C.PERF_FORMAT_TOTAL_TIME_ENABLED | C.PERF_FORMAT_LOST
K = [C.PERF_CONTEXT_KERNEL, 0xffffffff81000010, 0xffffffff81000020]


def group(*values, enabled=1000):
    """The read words of a group of ids 100, 101, ...: nr, time_enabled, {value, id, lost}."""
    words = [len(values), enabled]
    for i, v in enumerate(values):
        words += [v, 100 + i, 0]
    return words


def group_file(path, inherit, defer=False):
    """cpu-clock and task-clock in one group (ids 100 and 101), samples of two threads."""
    f = Synth(attrs=[make_attr(size=128, sample_type=ST, read_format=GROUP, defer=defer,
                               inherit=inherit, config=c) for c in (0, 1)])
    f.sample(tid=10, time=1000, read=group(100, 50))
    f.sample(tid=11, time=2000, read=group(130, 50))     # task-clock: 0 since tid 10's, 50 per thread
    f.sample(tid=10, time=3000, read=group(130, 80))
    f.sample(tid=10, time=4000, read=[3, 0, 200, 100, 0, 90, 101, 0, 5, 999, 0])   # id 999: unknown
    f.round()
    return f.save(path)


def ours(path, *args):
    r = run_cli("script", path, "--no-symbols", *args)
    assert r.returncode == 0, r.stderr.decode()
    return parse_fields(r.stdout.decode())


def report(path):
    r = run_cli("report", path, "--json")
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)


def heads(parsed):
    """[(tid, time, period, event)] in order."""
    return [(k[0], k[1], v[0], v[1]) for k, v in parsed.items()]


def test_perf_format_lost_matches_perf72():
    """hotspot's `perf record --call-graph dwarf -F97 -e '{cycles,instructions}:S'`: 34 records,
    68 samples in perf 7.2's perf script, each with its event, period and ips."""
    want = parse_fields(PERF72_TEXT.read_text())
    got = ours(FORMAT_LOST)
    assert len(want) == 68
    assert got == want
    rep = report(FORMAT_LOST)
    assert rep["perf"]["records"]["SAMPLE"] == 34
    assert rep["samples"] == 68 and rep["passed"] == 68 and rep["conserved"]
    assert rep["perf"]["sample_read"] == {"records": 34, "values": 68, "samples": 68,
                                  "zero_period": 0, "unknown_id": 0}


def test_perf_format_lost_live_perf72(tmp_path):
    """The stored text is what perf 7.2 prints today (rig), and it reads our rewrite the same."""
    perf = need_sid_perf()
    shutil.copy(FORMAT_LOST, tmp_path / "in.data")
    assert run_cli("stitch", tmp_path / "in.data", "-o", tmp_path / "st.data").returncode == 0
    want = parse_fields(PERF72_TEXT.read_text())
    for name in ("in.data", "st.data"):
        out = subprocess.run([perf, "script", "-i", "./" + name, "-F", "comm,tid,time,ip,period,event"],
                             cwd=tmp_path, capture_output=True, text=True).stdout
        assert parse_fields(out) == want, name


@pytest.mark.parametrize("inherit", [False, True])
def test_group_periods(tmp_path, inherit):
    """Period = value delta per id (per id and thread with inherit); zero deltas and unknown ids
    are not shown but counted; the rewritten file keeps every record once."""
    path = group_file(tmp_path / "g.data", inherit)
    got = heads(ours(path))
    t = "0.000001", "0.000002", "0.000003", "0.000004"
    if inherit:     # tid 11 starts from 0 for both ids
        want = [(10, t[0], 100, "cpu-clock"), (10, t[0], 50, "task-clock"),
                (11, t[1], 130, "cpu-clock"), (11, t[1], 50, "task-clock"),
                (10, t[2], 30, "cpu-clock"), (10, t[2], 30, "task-clock"),
                (10, t[3], 70, "cpu-clock"), (10, t[3], 10, "task-clock")]
    else:           # one storage per id: tid 11's task-clock delta is 0, not shown
        want = [(10, t[0], 100, "cpu-clock"), (10, t[0], 50, "task-clock"),
                (11, t[1], 30, "cpu-clock"),
                (10, t[2], 30, "task-clock"),
                (10, t[3], 70, "cpu-clock"), (10, t[3], 10, "task-clock")]
    assert got == want
    rep = report(path)
    assert rep["samples"] == len(want) and rep["conserved"]
    assert rep["perf"]["sample_read"] == {"records": 4, "values": 9, "samples": len(want),
                                  "zero_period": 2 if not inherit else 0, "unknown_id": 1}
    assert run_cli("stitch", path, "-o", tmp_path / "st.data").returncode == 0
    with PerfData.open(tmp_path / "st.data") as perf:
        assert sum(r.type == C.PERF_RECORD_SAMPLE for r in perf.records()) == 4
    # folded by period: each member's own period
    r = run_cli("folded", path, "--no-symbols", "--weight", "period")
    assert r.returncode == 0, r.stderr.decode()
    assert sum(int(line.rsplit(" ", 1)[1]) for line in r.stdout.decode().splitlines()) == \
        sum(w[2] for w in want)


@pytest.mark.parametrize("inherit", [False, True])
def test_group_periods_match_perf72(tmp_path, inherit):
    perf = need_sid_perf()
    group_file(tmp_path / "g.data", inherit)
    out = subprocess.run([perf, "script", "-i", "./g.data", "-F", "tid,time,ip,period,event"],
                         cwd=tmp_path, capture_output=True, text=True).stdout
    want = {k: (v[0], v[1], v[2]) for k, v in parse_fields(out).items()}
    assert want and ours(tmp_path / "g.data") == want


def test_group_periods_match_perf61(tmp_path):
    """perf 6.1 keeps one value per id (no per-thread storage yet): same as ours without inherit."""
    perf, _ver = need_perf61()
    group_file(tmp_path / "g.data", inherit=False)
    out = subprocess.run([perf, "script", "-i", str(tmp_path / "g.data"), "-F", "tid,time,ip,period,event"],
                         capture_output=True, text=True).stdout
    want = {k: (p, ev.split(":")[0], ips) for k, (p, ev, ips) in parse_fields(out).items()}
    assert want and ours(tmp_path / "g.data") == want


def test_single_counter_read_decoded(tmp_path):
    """A read that is not a group: value, both times, id, lost, in read_format order; its
    period is the delta of its value."""
    rf = (C.PERF_FORMAT_ID | C.PERF_FORMAT_LOST | C.PERF_FORMAT_TOTAL_TIME_ENABLED
          | C.PERF_FORMAT_TOTAL_TIME_RUNNING)
    f = Synth(attrs=[make_attr(size=128, sample_type=ST, read_format=rf, defer=False)])
    f.sample(tid=10, time=1000, read=[40, 7, 6, 100, 2])
    f.sample(tid=10, time=2000, read=[90, 9, 8, 100, 3])
    f.sample(tid=10, time=3000, read=[90, 9, 8, 100, 3])      # no change: not shown
    path = f.save(tmp_path / "one.data")
    with PerfData.open(path) as perf:
        ent = perf.evlist.first
        reads = [ent.layout.parse(r.data).read for r in perf.records() if r.type == C.PERF_RECORD_SAMPLE]
    assert [(r.group, r.time_enabled, r.time_running, r.values) for r in reads[:2]] == [
        (False, 7, 6, ((40, 100, 2),)), (False, 9, 8, ((90, 100, 3),))]
    assert [(h[2], h[3]) for h in heads(ours(path))] == [(40, "cpu-clock"), (50, "cpu-clock")]


def test_deferred_group_read_stitched_per_member(tmp_path):
    """A group read whose chain is deferred: every member gets the user stack; the stitched
    file carries the record once, with the whole chain."""
    f = Synth(attrs=[make_attr(size=144, sample_type=ST, read_format=GROUP, config=c) for c in (0, 1)])
    f.sample(tid=10, time=1000, kernel=K, cookie=0xA, read=group(100, 50))
    f.deferred(tid=10, time=1500, cookie=0xA, user=[0x401000, 0x402000])
    f.round()
    path = f.save(tmp_path / "d.data")
    got = ours(path)
    assert [(v[0], v[1], v[2]) for v in got.values()] == [
        (100, "cpu-clock", K[1:] + [0x401000, 0x402000]), (50, "task-clock", K[1:] + [0x401000, 0x402000])]
    rep = report(path)
    assert rep["samples"] == 2 and rep["stitched"] == 2 and rep["conserved"]
    assert run_cli("stitch", path, "-o", tmp_path / "st.data").returncode == 0
    with PerfData.open(tmp_path / "st.data") as perf:
        chains = [perf.evlist.for_sample(r.data).layout.parse(r.data).callchain
                  for r in perf.records() if r.type == C.PERF_RECORD_SAMPLE]
    assert chains == [tuple(K) + (C.PERF_CONTEXT_USER, 0x401000, 0x402000)]


def test_group_nr_past_the_record_is_one_line(tmp_path):
    """A group read whose nr runs past the record: what came before, then one line with the
    offset, exit 2."""
    f = Synth(attrs=[make_attr(size=128, sample_type=ST, read_format=GROUP, defer=False, config=c)
                     for c in (0, 1)])
    f.sample(tid=10, time=1000, read=group(100, 50))
    f.sample(tid=10, time=2000, read=[1 << 40] + group(130, 60)[1:])
    f.round()
    r = run_cli("script", f.save(tmp_path / "bad.data"), "--no-symbols")
    assert r.returncode == 2
    err = r.stderr.decode().strip().splitlines()
    assert len(err) == 1 and "offset 0x" in err[0] and "read values overrun" in err[0]
    assert [(v[0], v[1]) for v in parse_fields(r.stdout.decode()).values()] == [
        (100, "cpu-clock"), (50, "task-clock")]


def test_deferred_group_read_periods_in_time_order(tmp_path):
    """A deferred group read followed by another before its stack arrives: deltas in time order,
    as perf 7.2 gives them with --no-merge-callchains (its merge computes the deferred sample's
    deltas after the later sample's and wraps them below zero)."""
    f = Synth(attrs=[make_attr(size=144, sample_type=ST, read_format=GROUP, config=c) for c in (0, 1)])
    f.sample(tid=10, time=1000, kernel=K, cookie=0xA, read=group(100, 50))
    f.sample(tid=10, time=1200, kernel=K + [C.PERF_CONTEXT_USER, 0x401000], read=group(130, 80))
    f.deferred(tid=10, time=1500, cookie=0xA, user=[0x401000, 0x402000])
    f.round()
    path = f.save(tmp_path / "d.data")
    got = [(v[0], v[1]) for v in ours(path).values()]
    assert got == [(100, "cpu-clock"), (50, "task-clock"), (30, "cpu-clock"), (30, "task-clock")]
    perf = need_sid_perf()
    out = subprocess.run([perf, "script", "-i", "./d.data", "-F", "tid,time,ip,period,event",
                          "--no-merge-callchains"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert [(v[0], v[1]) for v in parse_fields(out).values() if v[1] is not None] == got
