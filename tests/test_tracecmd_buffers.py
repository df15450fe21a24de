"""trace-cmd record -B NAME: every buffer of a trace.dat is read, each stitched on its own; and
missed events, per CPU and time, explain only the lost stacks they could have taken.

Our synthetic files (tests/tracecmd_synth.py) are first read by the real trace-cmd 3.1.6 and
3.4, which must find the same buffers, events and dropped-event notices as our bridge."""
import json
import re
import struct
import subprocess

import pytest

import tracecmd_synth as S
from conftest import run_cli
from tracecmd_text import need_trace_cmd, parse, report, sid_report, split_buffers

from deferstitch.model import DEFERRED_LOST, DEFERRED_LOST_AFTER_LOST, STITCHED
from deferstitch.tracecmd.bridge import Trace
from deferstitch.tracecmd.reader import FtraceFeed

INSTANCES = ("inst", "lossy")


@pytest.fixture(scope="module")
def inst_file(tmp_path_factory):
    return S.instances(tmp_path_factory.mktemp("buffers") / "instances.dat")


def ours(path):
    """{buffer: [(name, pid, cpu, missed)]} as our bridge reads them."""
    out = {}
    with Trace(path) as trace:
        assert trace.buffers == ["top", *INSTANCES]
        for ev in trace:
            out.setdefault(ev.buffer, []).append((ev.name, ev.pid, ev.cpu, ev.missed))
    return out


def theirs(text):
    """The same, from trace-cmd report's text."""
    return {b: [(e.name, e.pid, e.cpu, e.dropped or 0) for e in parse(t)]
            for b, t in split_buffers(text, INSTANCES).items()}


def test_real_trace_cmd_finds_our_instances(inst_file):
    """trace-cmd 3.1.6 and 3.4 read the BUFFER options and each instance's CPU data: the same
    events per buffer, in the same order, with the same dropped-event notices as ours."""
    mine = ours(inst_file)
    assert {b: len(v) for b, v in mine.items()} == {"top": 27, "inst": 27, "lossy": 3}
    assert theirs(report(inst_file)) == mine
    text, _err = sid_report(inst_file)
    assert theirs(text) == mine


def test_version_7_with_instances(inst_file, tmp_path):
    """trace-cmd convert to v7 (sections, compressed): the same buffers, events and counts."""
    tool = need_trace_cmd()
    v7 = tmp_path / "v7.dat"
    p = subprocess.run([tool, "convert", "-i", str(inst_file), "-o", str(v7), "--file-version", "7",
                        "--compression", "any"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert v7.read_bytes()[:11] == b"\x17\x08\x44tracing7"
    assert ours(v7) == ours(inst_file) == theirs(report(v7))
    d6, d7 = (json.loads(run_cli("trace", "report", f, "--json", text=True).stdout) for f in (inst_file, v7))
    assert d7["ftrace"]["buffers"] == d6["ftrace"]["buffers"]


def test_each_buffer_is_stitched_on_its_own(inst_file):
    """Per buffer, the counts of the scenario; the totals add them up; the cookie of pid 100 in
    "lossy" is not served by the top buffer's stack for the same cookie."""
    p = run_cli("trace", "report", inst_file, "--json", text=True)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    bufs = d["ftrace"]["buffers"]
    assert list(bufs) == ["top", *INSTANCES]
    for name, want in S.INSTANCES_EXPECT.items():
        got = {k: bufs[name][k] for k in want}
        assert got == want, name
        b = bufs[name]
        assert b["samples"] == b["stitched"] + b["passed"] + sum(b["unmatched"].values())
    for key in ("samples", "stitched", "passed", "deferred_records", "lost_records", "lost_events"):
        assert d[key] == sum(b[key] for b in bufs.values()), key
    assert d["conserved"]
    lossy = [u for u in d["first_unmatched"] if u["reason"] == "stream-ended"]
    assert [(u["tid"], u["cookie"]) for u in lossy] == [(S.W, S.C1)]


def test_every_trace_command_reads_every_buffer(inst_file, tmp_path):
    total = sum(e["samples"] for e in S.INSTANCES_EXPECT.values())
    p = run_cli("trace", "folded", inst_file, text=True)
    assert p.returncode == 0, p.stderr
    assert sum(int(line.rsplit(" ", 1)[1]) for line in p.stdout.splitlines()) == total
    p = run_cli("trace", "script", inst_file, "--no-symbols", text=True)
    assert p.returncode == 0, p.stderr
    heads = [b for b in p.stdout.split("\n\n") if b.strip()]
    assert len(heads) == total
    times = [float(re.search(r"\] +(\d+\.\d+): ", h)[1]) for h in heads]
    assert times == sorted(times)                   # one time order across the buffers
    p = run_cli("trace", "report", inst_file, text=True)
    assert p.returncode == 0, p.stderr
    rows = {line.split()[0]: line.split() for line in p.stdout.splitlines()
            if line.split() and line.split()[0] in ("top", *INSTANCES)}
    assert {b: int(r[1]) for b, r in rows.items()} == {b: e["samples"] for b, e in S.INSTANCES_EXPECT.items()}
    svg = tmp_path / "f.svg"
    p = run_cli("trace", "flamegraph", inst_file, "-o", svg, text=True)
    assert p.returncode == 0, p.stderr
    assert "[user stack lost: stream-ended]" in svg.read_text()     # the "lossy" instance's


def test_a_single_buffer_file_has_one_buffer_row(tmp_path):
    p = run_cli("trace", "report", S.deferred(tmp_path / "d.dat"), "--json", text=True)
    d = json.loads(p.stdout)
    assert list(d["ftrace"]["buffers"]) == ["top"]
    assert d["ftrace"]["buffers"]["top"]["samples"] == d["samples"]


# -- missed events per CPU ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def missed_file(tmp_path_factory):
    return S.missed_per_cpu(tmp_path_factory.mktemp("missed") / "missed.dat")


def reasons(path, peek=True):
    out = []
    with Trace(path) as trace:
        args = trace.feed_args()
        if not peek:
            args["peek"] = None
        rep = FtraceFeed(sample=out.append, **args).run(trace)
    assert rep.conserved()
    return rep, {s.cookie: s.reason or s.outcome for s in out if s.cookie is not None}


def test_real_trace_cmd_reads_the_missed_scenario(missed_file):
    with Trace(missed_file) as trace:
        mine = [(ev.name, ev.pid, ev.cpu, ev.missed) for ev in trace]
    assert [(cpu, missed) for _n, _p, cpu, missed in mine if missed] == [(1, 4), (1, 2)]
    for text in (report(missed_file), sid_report(missed_file)[0]):
        assert [(e.name, e.pid, e.cpu, e.dropped or 0) for e in parse(text)] == mine


def test_missed_events_explain_only_stacks_they_could_have_taken(missed_file):
    """Losses on CPU 1 only; cookies pending on CPU 0 and CPU 1. A's and C's entries span a
    loss (their stacks may have been written on CPU 1: tasks migrate), B's ended before it."""
    rep, got = reasons(missed_file)
    assert {c: got[c] for c in S.MISSED_REASONS} == S.MISSED_REASONS
    assert got[S.CA2] == got[S.CB2] == got[S.CC2] == STITCHED
    assert (rep.samples, rep.stitched, rep.passed) == (9, 3, 3)
    assert dict(rep.unmatched) == {DEFERRED_LOST_AFTER_LOST: 2, DEFERRED_LOST: 1}
    assert (rep.lost_records, rep.lost_events) == (2, 6)


def test_a_loss_reported_after_the_stack_that_ends_the_wait(missed_file):
    """C's first stack may be in CPU 1's second loss, which CPU 1 reports only at its next
    record (12 ms), after C's next stack (10 ms) ended the wait: the peek at CPU 1's next page
    knows it already; without it, that loss would come too late."""
    _rep, got = reasons(missed_file, peek=False)
    assert got[S.CC1] == DEFERRED_LOST
    assert reasons(missed_file)[1][S.CC1] == DEFERRED_LOST_AFTER_LOST


def test_old_loss_windows_are_forgotten_not_the_live_ones(tmp_path):
    """1030 losses on CPU 1, a millisecond apart, each window 0.1 ms long. Task A's first entry
    (cookie on CPU 0) spans some of them, task B's lies between two. The windows before every
    waiting entry are dropped (memory stays bounded), those A needs are kept."""
    td = S.TraceDat(2, [S.USER_UNWIND_COOKIE, S.USER_UNWIND_STACK], [S.GETPPID, S.WORK], S.COMMS)
    ms, us = S.MS, S.MS // 1000

    def work(ts):
        td.event(1, ts, S.WORK, S.KW, work=1, function=S.kaddr("ksys_read", 0))

    def traced(ts, task, cookie):
        td.event(0, ts, S.GETPPID, task, __syscall_nr=110)
        td.event(0, ts, S.USER_UNWIND_COOKIE, task, cookie=cookie)

    for i in range(1, 1031):
        td.drop(1, S.T0 + i * ms, 1)         # lost after the work at (i - 1) ms + 900 us
        work(S.T0 + i * ms)
        work(S.T0 + i * ms + 900 * us)
    t = S.T0 + 1000 * ms
    traced(t + 100 * us, S.A, S.CA1)
    traced(t + 200 * us, S.B, S.CB1)
    traced(t + 500 * us, S.B, S.CB2)         # B's first entry: 200-500 us, no loss then
    traced(t + 5 * ms + 100 * us, S.A, S.CA2)
    for task, cookie in ((S.A, S.CA2), (S.B, S.CB2)):
        td.event(0, t + 40 * ms, S.USER_UNWIND_STACK, task, cookie=cookie, stack=[0x1139],
                 inodes=[0], dev=[0])
    out = []
    with Trace(td.write(tmp_path / "many.dat")) as trace:
        feed = FtraceFeed(sample=out.append, **trace.feed_args())
        rep = feed.run(trace)
    got = {s.cookie: s.reason for s in out if s.cookie in (S.CA1, S.CB1)}
    assert got == {S.CA1: DEFERRED_LOST_AFTER_LOST, S.CB1: DEFERRED_LOST}
    assert rep.lost_records == 1030 and rep.conserved()
    assert len(feed.windows["top"]) < 100


@pytest.mark.parametrize("where", [0, 1, 8192, 1 << 62])
def test_an_unreadable_instance_after_the_others(inst_file, tmp_path, where):
    """A BUFFER option pointing at no CPU table: the other buffers are read and reported,
    marked incomplete; one line naming the file and the instance; exit 2."""
    data = bytearray(inst_file.read_bytes())
    struct.pack_into("<Q", data, data.index(b"inst\0") - 8, where)
    bad = tmp_path / "bad.dat"
    bad.write_bytes(bytes(data))
    p = run_cli("trace", "report", bad, "--json", text=True)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("deferstitch: %s: " % bad)
    assert "'inst'" in p.stderr and "Traceback" not in p.stderr
    d = json.loads(p.stdout)
    assert d["complete"] is False and d["conserved"]
    assert {b: v["samples"] for b, v in d["ftrace"]["buffers"].items()} == {"top": 8, "lossy": 1}
    p = run_cli("trace", "folded", bad, text=True)
    assert p.returncode == 2 and p.stdout                          # the good part is written
