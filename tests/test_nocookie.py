"""The layout before the cookie patch: matching by task order, never a stack of another entry.

Rules on small synthetic streams (tests/synth.py, no_cookie=True); the real captures rewritten
into that layout (tests/nocookie.py), with the cookie answer on the original as the truth; and
random streams through the core, drawn from a model of the kernel with cookies as the truth.
"""
import json
import lzma
import os
import shutil
import struct
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from collect import Collect, ours_by_tid, stitch
from conftest import DATA, ROOT, SCENARIOS, capture, need_sid_perf
from deferstitch.abi import consts as C
from deferstitch.errors import FormatError
from deferstitch.model import (AMBIGUOUS_NO_COOKIE, LOST_NO_COOKIE, NO_COOKIE, STITCHED,
                               STREAM_ENDED, TASK_EXITED, DeferredStack, Sample)
from deferstitch.perfdata import engine
from deferstitch.perfdata.feed import PerfFeed, probe_layout
from deferstitch.perfdata import buffers
from deferstitch.perfdata.buffers import SLACK, LossWatch
from deferstitch.perfdata.reader import PerfData
from deferstitch.stitcher import Stitcher
from nocookie import precookie_task_events, strip_cookies
from oracle import cookie_rule, parse_script_fields
from synth import BASIC, Synth, make_attr

BASIC_ID = BASIC | C.PERF_SAMPLE_IDENTIFIER
U1, U2, U3 = [0x401000, 0x401100], [0x402000], [0x403000, 0x403100, 0x403200]


def run(f, tmp_path, name="nc.data"):
    samples, rep, _ = stitch(f.save(str(tmp_path / name)))
    assert rep.conserved()
    return samples, rep


def outcome(s):
    return (s.outcome, s.reason, tuple(s.user) if s.outcome == STITCHED else None)


@pytest.mark.parametrize("endian", ["<", ">"])
def test_pending_samples_get_the_next_stack_of_their_task(tmp_path, endian):
    f = Synth(endian, no_cookie=True)
    f.sample(10, 100, cookie=1)
    f.sample(11, 110, cookie=1)
    f.sample(10, 120, cookie=1)
    f.deferred(11, 130, 1, U2)
    f.deferred(10, 140, 1, U1)
    samples, rep = run(f, tmp_path)
    assert [outcome(s) for s in samples] == [(STITCHED, None, tuple(U1)), (STITCHED, None, tuple(U2)),
                                             (STITCHED, None, tuple(U1))]
    assert rep.deferred_layout == "no-cookie" and rep.to_json()["deferred_layout"] == "no-cookie"


def test_after_a_stack_samples_are_in_doubt_until_a_user_mode_sample(tmp_path):
    f = Synth(no_cookie=True)
    f.sample(10, 100, cookie=1)
    f.deferred(10, 110, 1, U1)
    f.sample(10, 120, cookie=1)            # entry A after its stack, or the next entry?
    f.sample(10, 125, cookie=1)            # the same question ...
    f.deferred(10, 130, 1, U2)             # ... other frames: only the last one is known to be B's
    f.sample(10, 140, cookie=1)            # in doubt between U2 and the next stack ...
    f.sample(10, 145, cookie=1)
    f.deferred(10, 150, 1, U2)             # ... which is U2 again: U2 either way
    f.sample(10, 160, cookie=1, user_mode=True)    # T is in user space: a new entry
    f.sample(10, 170, cookie=1)            # same entry as the user-mode sample
    f.deferred(10, 180, 1, U3)
    samples, rep = run(f, tmp_path)
    assert [outcome(s) for s in samples] == [
        (STITCHED, None, tuple(U1)), ("unmatched", AMBIGUOUS_NO_COOKIE, None),
        (STITCHED, None, tuple(U2)), (STITCHED, None, tuple(U2)), (STITCHED, None, tuple(U2)),
        (STITCHED, None, tuple(U3)), (STITCHED, None, tuple(U3))]
    assert rep.first_unmatched[0][2] is None        # no cookie to show


def test_precookie_task_events_take_the_next_stack_of_their_task(tmp_path):
    """The series before the cookie patch queues a task event's work again when it is sampled
    after the work ran, so the next stack is every sample's; its attrs say so (no defer_output,
    disabled until exec). The same stream from a 7.x kernel (defer_output) keeps its doubt."""
    out = {}
    for name, attrs in (("7x", None), ("pre", [make_attr(precookie_task=True)])):
        f = Synth(attrs=attrs, no_cookie=True)
        f.sample(10, 100, cookie=1)
        f.deferred(10, 110, 1, U1)
        f.sample(10, 120, cookie=1)        # 7.x: entry A after its stack, or the next entry
        f.sample(10, 125, cookie=1)
        f.deferred(10, 130, 1, U2)
        path = f.save(str(tmp_path / (name + ".data")))
        samples, rep = stitch(path)[:2]
        assert rep.conserved()
        out[name] = [outcome(s) for s in samples]
        r = subprocess.run([sys.executable, "-m", "deferstitch", "report", "--json", path], cwd=ROOT,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["perf"]["no_cookie_stacks"] == ("requeued" if name == "pre"
                                                                    else "per-entry")
    assert out["7x"] == [(STITCHED, None, tuple(U1)), ("unmatched", AMBIGUOUS_NO_COOKIE, None),
                         (STITCHED, None, tuple(U2))]
    assert out["pre"] == [(STITCHED, None, tuple(U1)), (STITCHED, None, tuple(U2)),
                          (STITCHED, None, tuple(U2))]


def test_eviction_leaves_the_last_sample_its_proof(tmp_path):
    f = Synth(no_cookie=True)
    f.sample(10, 100, cookie=1)
    f.deferred(10, 110, 1, U1)
    f.sample(10, 120, cookie=1)            # in doubt, and given up for memory (--max-pending 1)
    f.sample(10, 130, cookie=1)            # the last one before the stack: B's
    f.deferred(10, 140, 1, U2)
    samples, rep = stitch(f.save(str(tmp_path / "nc.data")), max_pending=1)[:2]
    assert [outcome(s) for s in samples] == [(STITCHED, None, tuple(U1)),
                                             ("unmatched", "evicted", None),
                                             (STITCHED, None, tuple(U2))]
    assert rep.conserved()


def test_lost_records_give_up_what_is_pending_and_what_follows_until_user_space(tmp_path):
    f = Synth(no_cookie=True)
    f.sample(10, 100, cookie=1)
    f.sample(11, 105, cookie=1, user_mode=True)
    f.lost(110)                             # T10's or T11's stack may be in there
    f.deferred(10, 120, 1, U1)              # maybe a later entry's
    f.sample(10, 130, cookie=1)             # its own stack may have been lost before
    f.sample(12, 135, cookie=1)             # a task first seen after the loss: the same
    f.sample(10, 140, cookie=1, user_mode=True)    # T10 in user space again: fine from here
    f.sample(10, 150, cookie=1)
    f.deferred(10, 160, 1, U2)
    f.deferred(12, 170, 1, U3)
    samples, rep = run(f, tmp_path)
    assert [outcome(s) for s in samples] == [
        ("unmatched", LOST_NO_COOKIE, None), ("unmatched", STREAM_ENDED, None),   # T11: no stack
        ("unmatched", AMBIGUOUS_NO_COOKIE, None),   # U1 (after its stack) or U2: in doubt first
        ("unmatched", LOST_NO_COOKIE, None),
        (STITCHED, None, tuple(U2)), (STITCHED, None, tuple(U2))]
    assert rep.extra["no_cookie_held_back"] == {"stack-may-be-lost": 1, "earlier-stack-may-be-lost": 1}


def _two_buffers():
    """A per-task file as perf record writes one on 2 CPUs: one inherited event, an id per CPU
    (ids 100 and 101: the CPU map's order), samples without CPU or ID."""
    f = Synth(no_cookie=True)
    ent = f.evlist.entries[0]
    ent.ids = [100, 101]
    f.evlist.by_id[101] = ent
    return f


MS = 1_000_000


def test_a_loss_revealed_after_the_stack_holds_the_sample_back(tmp_path):
    """The case the cookie was made for: T10's stack is dropped by CPU 0's full buffer, T10
    goes on on CPU 1 and writes its next entry's stack there; CPU 0's LOST comes only when that
    buffer takes a record again, rounds later (the time order puts it after the stack). Task
    order would give the sample the next entry's stack; the buffer's loss interval (from its
    last record to the LOST) covers the sample, so it is held back; what the file proves
    clean is stitched."""
    f = _two_buffers()
    f.sample(10, 100 * MS, cookie=1)             # round 1, CPU 0: its stack is dropped later
    f.sample(11, 90 * MS, cookie=1)              # ... CPU 1 (time goes back: a new piece)
    f.round()
    f.sample(10, 140 * MS, cookie=1, user_mode=True)      # round 2, CPU 1 only
    f.sample(10, 160 * MS, cookie=1)
    f.deferred(10, 170 * MS, 1, U2)              # the next entry's stack
    f.round()
    for t in (200, 250):                         # CPU 0 silent
        f.sample(11, t * MS, cookie=1)
        f.round()
    f.lost(300 * MS, id_=100)                    # CPU 0 takes a record again: the loss shows
    f.sample(12, 300 * MS, cookie=1)
    f.sample(11, 290 * MS, cookie=1)             # CPU 1
    f.sample(11, 350 * MS, cookie=1, user_mode=True)
    f.round()
    f.sample(11, 400 * MS, cookie=1)             # CPU 1, after T11 was seen in user space
    f.deferred(11, 410 * MS, 1, U3)
    f.round()
    f.sample(12, 500 * MS, cookie=1)             # CPU 0: both buffers seen past 410 ms
    f.sample(11, 495 * MS, cookie=1, user_mode=True)
    f.deferred(12, 505 * MS, 1, U1)
    f.deferred(11, 510 * MS, 1, U1)
    f.raw(C.PERF_RECORD_LOST_SAMPLES, struct.pack("<Q", 5) + f.trailer(0, 0))   # perf's count: 5
    samples, rep = run(f, tmp_path)
    got = {(s.tid, s.time // MS): outcome(s) for s in samples}
    assert got[10, 100] == ("unmatched", LOST_NO_COOKIE, None)       # not U2: never a guess
    assert got[10, 140] == got[10, 160] == ("unmatched", LOST_NO_COOKIE, None)
    assert got[11, 350] == got[11, 400] == (STITCHED, None, tuple(U3))
    assert got[11, 495] == (STITCHED, None, tuple(U1))
    held = rep.extra["no_cookie_held_back"]
    assert sum(held.values()) == rep.unmatched[LOST_NO_COOKIE] and held["stack-may-be-lost"] >= 3
    path = f.save(str(tmp_path / "r.data"))
    r = subprocess.run([sys.executable, "-m", "deferstitch", "report", path], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "held back for want of proof that no record was lost: %d (%s)" % (
        sum(held.values()), ", ".join("%s %d" % kv for kv in sorted(held.items()))) in r.stdout
    r = subprocess.run([sys.executable, "-m", "deferstitch", "report", "--json", path], cwd=ROOT,
                       capture_output=True, text=True)
    assert json.loads(r.stdout)["perf"]["no_cookie_held_back"] == held


def test_a_stitch_waits_for_every_buffer_to_show_its_losses(tmp_path):
    """The stack is there, but CPU 0 has shown nothing since before it: the stitch waits (it
    is still undecided when the stack is delivered) until CPU 0 either shows a record with no
    LOST before it (stitched) or its LOST (held back). (A file with no LOST record at all is
    stitched as it comes: the early loss on CPU 1 makes this one wait for proof.)"""
    outs = {}
    for lost in (False, True):
        f = _two_buffers()
        f.sample(20, 10 * MS)                    # CPU 0 (not deferred: passed)
        f.lost(1 * MS, id_=101)                  # CPU 1: a loss before anything of T10
        f.sample(10, 5 * MS, cookie=1, user_mode=True)   # CPU 1
        f.round()
        f.sample(10, 20 * MS, cookie=1)          # CPU 1
        f.deferred(10, 30 * MS, 1, U2)
        f.round()
        f.sample(11, 40 * MS, cookie=1)          # CPU 1: T11 waits for a stack (never comes)
        f.round()
        for t in range(60, 200, 20):             # CPU 1 goes on, CPU 0 stays silent
            f.sample(11, t * MS)
            f.round()
        if lost:
            f.lost(250 * MS, id_=100)            # CPU 0's loss began after its record at 10 ms
        f.sample(20, 250 * MS)
        f.sample(11, 240 * MS)
        samples, rep = run(f, tmp_path, "w%d.data" % lost)
        outs[lost] = {(s.tid, s.time // MS): outcome(s) for s in samples}
        assert rep.max_pending == 3              # T10's two waited for proof, T11's for a stack
    assert outs[False][10, 20] == outs[False][10, 5] == (STITCHED, None, tuple(U2))
    assert outs[True][10, 20] == outs[True][10, 5] == ("unmatched", LOST_NO_COOKIE, None)
    # what waits for proof is pending: --max-pending bounds it (the oldest given up, counted)
    samples, rep = stitch(str(tmp_path / "w0.data"), max_pending=2)[:2]
    got = {(s.tid, s.time // MS): outcome(s) for s in samples}
    assert rep.conserved() and rep.unmatched["evicted"] == 1
    assert got[10, 5] == ("unmatched", "evicted", None) and got[10, 20][0] == STITCHED


def test_a_silent_buffer_with_no_loss_to_come_holds_nothing_back(tmp_path):
    """The LOST records are read ahead: CPU 1 stays silent after its first record, but no LOST
    of it is to come and perf's final counts match the LOST records, so each of T10's stitches
    on CPU 0 is decided when its stack comes (one sample pending at a time), not at the end."""
    f = _two_buffers()
    f.lost(1 * MS, n=2, id_=100)                 # CPU 0: an early loss, before everything
    f.sample(10, 2 * MS, user_mode=True)
    f.sample(11, int(1.5 * MS), cookie=1, user_mode=True)   # CPU 1 (back in time: its piece)
    f.deferred(11, int(1.6 * MS), 1, U3)
    f.round()
    for n in range(20):                          # CPU 0 only, one run a round: no pins
        t = (10 + 10 * n) * MS
        f.sample(10, t, cookie=1)
        f.deferred(10, t + MS, 1, U1)
        f.sample(10, t + 2 * MS, user_mode=True)
        f.round()
    f.raw(C.PERF_RECORD_LOST_SAMPLES, struct.pack("<Q", 2) + f.trailer(0, 0))
    samples, rep = run(f, tmp_path)
    assert [outcome(s) for s in samples if s.tid == 10 and s.cookie is not None] == \
        [(STITCHED, None, tuple(U1))] * 20
    assert rep.max_pending == 1


def _watched(f, tmp_path):
    """Run a LossWatch over the records of Synth ``f`` saved as a file, in file order."""
    with PerfData.open(f.save(str(tmp_path / "w.data"))) as perf:
        watch = LossWatch(perf)
        for _rec in watch.records(perf.records()):
            pass
    return watch


def test_the_watch_pins_records_to_buffers_by_piece_order_and_ids(tmp_path):
    """Rounds hold one piece per buffer in CPU order: a sample (an interrupt's: cpu-clock)
    earlier than a record before it starts a later buffer's piece; a deferred stack earlier than
    the sample before it does not (task context: its time may precede an interrupt's sample);
    a LOST names its buffer by id; a round with one run and no id pins nothing."""
    f = _two_buffers()
    f.sample(10, 100 * MS, cookie=1)             # round 1: CPU 0 ...
    f.deferred(10, 99 * MS, 1, U1)               # ... still CPU 0 (task context, back in time)
    f.sample(11, 90 * MS, cookie=1)              # CPU 1: an interrupt's sample, back in time
    f.round()
    f.sample(10, 200 * MS, cookie=1)             # round 2: one run, nothing says whose
    f.sample(11, 210 * MS, cookie=1)
    f.round()
    f.lost(300 * MS, id_=101)                    # round 3: CPU 1 by its LOST
    f.sample(11, 300 * MS, cookie=1)
    w = _watched(f, tmp_path)
    assert not w.by_cpu and w.nbuf == 2
    assert w.ended and w.horizon == {0: 100 * MS, 1: 300 * MS}
    assert w.hazards == [(300 * MS, 90 * MS - SLACK)]      # from CPU 1's record before it

    attr = make_attr(sample_type=BASIC_ID)
    g = Synth(attrs=[attr], no_cookie=True)
    g.evlist.entries[0].ids = [100, 101]
    g.evlist.by_id[101] = g.evlist.entries[0]
    g.sample(10, 200 * MS, cookie=1, sample_id=100)      # one run, but each sample names its CPU
    g.sample(11, 210 * MS, cookie=1, sample_id=101)
    w = _watched(g, tmp_path)
    assert w.horizon == {0: 200 * MS, 1: 210 * MS}


def test_attrs_without_ids_still_see_every_loss(tmp_path):
    """A file whose attrs list no sample ids (a writer other than perf record, or one that left
    them out) names no buffer: every LOST is a loss of some buffer, from the start to its time,
    and holds back what it meets (it was ignored: T10's lost stack became the next entry's)."""
    f = Synth(no_cookie=True)
    f.evlist.entries[0].ids = []
    f.evlist.by_id.clear()
    f.sample(10, 90 * MS, user_mode=True)
    f.sample(10, 100 * MS, cookie=1)             # its stack is lost
    f.round()
    f.lost(120 * MS)
    f.sample(11, 110 * MS, user_mode=True)       # T11 seen in user space after 120 ms only
    f.sample(11, 140 * MS, user_mode=True)
    f.sample(11, 150 * MS, cookie=1)
    f.deferred(10, 130 * MS, 1, U2)              # T10's next entry's
    f.deferred(11, 160 * MS, 1, U3)
    f.round()
    for t in (200, 300, 400):                    # decided before the end
        f.sample(20, t * MS)
        f.round()
    path = f.save(str(tmp_path / "noids.data"))
    for samples, rep in (stitch(path)[:2], _as_stdin(path)):     # read ahead, and not
        assert rep.conserved()
        got = {(s.tid, s.time // MS): outcome(s) for s in samples if s.cookie is not None}
        assert got == {(10, 100): ("unmatched", LOST_NO_COOKIE, None),
                       (11, 150): (STITCHED, None, tuple(U3))}
        assert rep.extra["no_cookie_held_back"] == {"stack-may-be-lost": 1}


@pytest.mark.parametrize("hybrid", [False, True])
def test_attrs_on_other_cpus_do_not_share_a_buffer_by_the_order_of_their_ids(tmp_path, hybrid):
    """Without ID_INDEX an id's buffer is told by its place among its attr's ids (one per CPU
    of the attr's CPU map). That holds when every attr has the same map; on a hybrid machine a
    core PMU's event has ids for its own CPUs only: here cycles on CPUs 0 and 1 (ids 100, 102)
    and another PMU's event on CPU 2 (id 101; and CPU 3, id 103, with the HYBRID_TOPOLOGY
    feature perf writes there) -- its first id is not CPU 0's buffer. Taken for it, CPU 2's
    record at 200 ms would seem to show that CPU 0 lost nothing before T10's next entry's stack
    (U2), and T10's sample, whose stack CPU 0 dropped, would get U2."""
    ident = BASIC | C.PERF_SAMPLE_IDENTIFIER
    f = Synth(attrs=[make_attr(sample_type=ident, type_=0), make_attr(sample_type=ident, type_=0,
                                                                      config=1)], no_cookie=True)
    f.evlist.entries[0].ids = [100, 102]
    f.evlist.by_id[102] = f.evlist.entries[0]
    if hybrid:
        f.evlist.entries[1].ids = [101, 103]
        f.evlist.by_id[103] = f.evlist.entries[1]
    f.sample(10, 90 * MS, user_mode=True)                # CPU 0 (id 100)
    f.sample(10, 100 * MS, cookie=1)                     # its stack: dropped on CPU 0
    f.sample(11, 95 * MS, user_mode=True, sample_id=102)     # CPU 1
    f.round()
    f.sample(10, 140 * MS, cookie=1, sample_id=102)      # the next entry, on CPU 1
    f.deferred(10, 170 * MS, 1, U2, sample_id=102)
    f.round()
    f.sample(12, 200 * MS, attr_index=1)                 # CPU 2 (id 101)
    f.round()
    f.sample(11, 250 * MS, sample_id=102)
    f.round()
    f.lost(300 * MS, id_=100)                            # CPU 0's loss, revealed
    f.sample(13, 300 * MS)
    f.raw(C.PERF_RECORD_LOST_SAMPLES, struct.pack("<Q", 5) + f.trailer(0, 0))    # perf's count
    path = f.save(str(tmp_path / "h.data"), features={30: b"\1\0\0\0"} if hybrid else None)
    samples, rep = stitch(path)[:2]
    assert rep.conserved()
    got = {(s.tid, s.time // MS): outcome(s) for s in samples if s.cookie is not None}
    assert got[10, 100] == ("unmatched", LOST_NO_COOKIE, None)      # not U2


def test_a_round_not_in_perfs_layout_pins_nothing_in_its_next_chunk(tmp_path, monkeypatch):
    """A round too big for one look (MAX_CHUNK records) is examined in chunks, the least buffer
    rank carried over. A chunk that contradicts perf record's layout (here CPU 1's LOST before
    CPU 0's) pins nothing but LOSTs, and neither may the rest of its round: carried over, its
    bound would pin T10's records, and T20's at 100 ms, to CPU 1, whose later LOST would then
    seem to start after T10's stack."""
    monkeypatch.setattr(buffers, "MAX_CHUNK", 4)
    f = _two_buffers()
    f.sample(30, 5 * MS, cookie=1)               # chunk 1 (a deferred sample: task order on)
    f.lost(10 * MS, id_=101)                     # CPU 1 ...
    f.lost(12 * MS, id_=100)                     # ... then CPU 0: not perf record's order
    f.sample(20, 13 * MS)
    f.sample(10, 20 * MS, user_mode=True)        # chunk 2: whose buffer, nothing says
    f.sample(10, 30 * MS, cookie=1)
    f.deferred(10, 40 * MS, 1, U2)
    f.sample(20, 100 * MS)
    f.round()
    f.lost(200 * MS, id_=101)                    # CPU 1 lost records since its LOST at 10 ms
    f.sample(21, 200 * MS)
    samples, rep = run(f, tmp_path)
    assert [outcome(s) for s in samples if s.tid == 10 and s.cookie is not None] == [
        ("unmatched", LOST_NO_COOKIE, None)]


@pytest.mark.parametrize("per_buffer", [False, True])
def test_a_loss_no_record_followed_shows_in_perfs_final_count(tmp_path, per_buffer):
    """T10's stack is dropped on CPU 0, which never takes a record again: no LOST is ever
    written. perf's LOST_SAMPLES at the end (per event and CPU, in that order, only counts
    above 0) say more was lost than LOST records told: when there is one per CPU, on the CPU
    whose count is short (from its last record on: T11's stitch on CPU 1, over before it, stands),
    else on some buffer, from the earliest last record of any (T11's is held back too)."""
    f = _two_buffers()
    f.sample(10, 85 * MS, cookie=1, user_mode=True)      # CPU 0
    f.sample(10, 100 * MS, cookie=1)             # CPU 0: its stack is dropped afterwards
    if per_buffer:
        f.lost(80 * MS, n=3, id_=101)            # CPU 1, early: its count says 3
    f.sample(11, 90 * MS, cookie=1, user_mode=True)      # CPU 1
    f.sample(11, 92 * MS, cookie=1)
    f.deferred(11, 95 * MS, 1, U3)               # before CPU 0's last record (100 ms)
    f.round()
    f.sample(10, 140 * MS, cookie=1)             # CPU 1: T10 moved
    f.deferred(10, 150 * MS, 1, U2)              # the next entry's stack
    f.round()
    for n in ([5, 3] if per_buffer else [5]):
        f.raw(C.PERF_RECORD_LOST_SAMPLES, struct.pack("<Q", n) + f.trailer(0, 0))
    samples, rep = run(f, tmp_path)
    got = {(s.tid, s.time // MS): outcome(s) for s in samples}
    assert got[10, 85] == got[10, 100] == got[10, 140] == ("unmatched", LOST_NO_COOKIE, None)
    assert got[11, 90] == got[11, 92] == (
        (STITCHED, None, tuple(U3)) if per_buffer else ("unmatched", LOST_NO_COOKIE, None))


def test_a_stack_without_a_time_proves_nothing(tmp_path):
    """A stack whose event's sample_id has no TIME (its attr lacks PERF_SAMPLE_TIME, the
    samples' has it) may have been written any time after its sample: a loss after it, which
    a stack of known time escapes, holds it back; one line of report, no traceback, both paths."""
    ident = BASIC | C.PERF_SAMPLE_IDENTIFIER
    got = {}
    for timed in (True, False):
        f = Synth(attrs=[make_attr(sample_type=ident),
                         make_attr(sample_type=ident if timed else ident & ~C.PERF_SAMPLE_TIME,
                                   config=9)], no_cookie=True)
        f.sample(10, 3 * MS, user_mode=True)          # T10 in user space (not deferred)
        f.sample(10, 5 * MS, cookie=1)
        for t in (8, 9, 10):                    # rounds: the sample leaves the sorter first
            f.round()
            f.sample(20, t * MS)
        f.round()
        f.deferred(10, 6 * MS, 1, U1, attr_index=1)
        f.round()
        f.lost(20 * MS, id_=100)                # the one buffer lost records after 10 ms
        f.sample(20, 20 * MS)
        path = f.save(str(tmp_path / ("t%d.data" % timed)))
        samples, rep = stitch(path)[:2]
        assert rep.conserved() and rep.deferred_records == 1
        got[timed] = [outcome(s) for s in samples if s.tid == 10 and s.cookie is not None]
        out = {}
        for accel in ("1", "0"):
            r = subprocess.run([sys.executable, "-m", "deferstitch", "report", "--json", path],
                               cwd=ROOT, capture_output=True, text=True,
                               env=dict(os.environ, DEFERSTITCH_ACCEL=accel))
            assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
            out[accel] = r.stdout
        assert out["1"] == out["0"]
        assert json.loads(out["0"])["perf"]["no_cookie_held_back"] == (
            {} if timed else {"stack-may-be-lost": 1})
    assert got == {True: [(STITCHED, None, tuple(U1))], False: [("unmatched", LOST_NO_COOKIE, None)]}


def _syswide():
    """A system-wide file (-a): one event per CPU (ids 100, 101), each record's CPU in it."""
    f = Synth(attrs=[make_attr(sample_type=BASIC | C.PERF_SAMPLE_CPU)], no_cookie=True)
    ent = f.evlist.entries[0]
    ent.ids = [100, 101]
    f.evlist.by_id[101] = ent
    return f


def _as_stdin(path):
    """(samples, report) of ``path`` read as standard input is: no read ahead."""
    with open(path, "rb") as fh:
        perf = PerfData(fh, "<stdin>")
        out = Collect()
        rep = PerfFeed(perf, out).run()
    return out.samples, rep


@pytest.mark.parametrize("case", ["late-lost", "lost-at-end", "count-only", "task-unknown-id",
                                  "task-lost-at-end"])
def test_files_we_do_not_have_never_get_another_entrys_stack(tmp_path, case):
    """Losses the captures do not show, each with the cookie answer beside it (``truth``: the
    frames of each sample's own entry, None where its stack was lost). T10's stack is dropped
    by CPU 0's full buffer after its sample at 100 ms; T10 then enters the kernel again on CPU 1
    and writes that entry's stack (U2); CPU 0 says so late: its LOST comes rounds later
    (late-lost), or as the file's very last record (lost-at-end), or never, only perf's final
    count says CPU 0 lost more (count-only); -a files (records carry their CPU). task-*: per
    task (ids per CPU, records without CPU or id, rounds of one run of times: only a LOST pins
    a record to its buffer), the LOST as the file's very last record, or late with an id no
    attr has. From a file and from standard input (no read ahead): never a stitch to another
    entry's stack; T11's, after CPU 0's loss was revealed and CPU 0 went on, is proven."""
    task = case.startswith("task")
    f = _two_buffers() if task else _syswide()
    cpu = {} if task else {"cpu": 1}
    c0 = {} if task else {"cpu": 0}
    truth = {}

    def sample(tid, ms, frames, **kw):
        f.sample(tid, ms * MS, cookie=1, **kw)
        truth[tid, ms] = frames

    f.sample(10, 90 * MS, user_mode=True, **c0)          # T10 in user space, on CPU 0
    sample(10, 100, None, **c0)                          # its stack: dropped on CPU 0
    f.sample(11, 95 * MS, user_mode=True, **cpu)         # CPU 1 (back in time: its piece)
    f.round()
    sample(10, 140, tuple(U2), **cpu)                    # the next entry, on CPU 1
    f.deferred(10, 170 * MS, 1, U2, **cpu)
    f.round()
    for t in (200, 250):                                 # CPU 0 silent
        f.sample(11, t * MS, **cpu)
        f.round()
    if case == "late-lost":
        f.lost(300 * MS, id_=100, **c0)
    elif case == "task-unknown-id":
        f.lost(300 * MS, id_=999)
    f.sample(11, 350 * MS, user_mode=True, **cpu)
    sample(11, 400, tuple(U3), **cpu)
    f.deferred(11, 410 * MS, 1, U3, **cpu)
    f.round()
    if case in ("late-lost", "task-unknown-id"):
        f.sample(12, 500 * MS, **c0)                     # CPU 0 again, past everything
    if case == "count-only":
        f.raw(C.PERF_RECORD_LOST_SAMPLES, struct.pack("<Q", 5) + f.trailer(0, 0))
    elif case.endswith("lost-at-end"):
        f.lost(600 * MS, id_=100, **c0)                  # nothing of CPU 0 after it
    path = f.save(str(tmp_path / "x.data"))
    for how, (samples, rep) in (("file", stitch(path)[:2]), ("stdin", _as_stdin(path))):
        assert rep.conserved() and rep.deferred_layout == "no-cookie"
        got = {(s.tid, s.time // MS): s for s in samples if s.cookie is not None}
        assert set(got) == set(truth)
        for key, s in got.items():
            if s.outcome == STITCHED:
                assert tuple(s.user) == truth[key], (how, key)
        assert got[10, 100].reason == LOST_NO_COOKIE, how      # not U2: never a guess
        if case in ("late-lost", "task-unknown-id"):
            assert got[11, 400].outcome == STITCHED, how
        assert sum(rep.extra["no_cookie_held_back"].values()) == rep.unmatched[LOST_NO_COOKIE]


def test_task_exit_and_a_new_task_on_the_same_tid(tmp_path):
    f = Synth(no_cookie=True)
    f.sample(10, 100, cookie=1)
    f.exit(10, 110)
    f.deferred(10, 120, 1, U1)              # the last stack comes after EXIT (task work in do_exit)
    f.sample(11, 130, cookie=1)
    f.exit(11, 140)                         # ... and this one never comes
    f.fork(11, 2_000_000_000)               # the tid is reused: the old task is given up
    f.sample(11, 2_000_000_100, cookie=1)   # the new task owes no stack from before
    f.deferred(11, 2_000_000_200, 1, U2)
    samples, _ = run(f, tmp_path)
    assert [outcome(s) for s in samples] == [(STITCHED, None, tuple(U1)),
                                             ("unmatched", TASK_EXITED, None),
                                             (STITCHED, None, tuple(U2))]


def test_a_file_mixing_both_layouts_is_damage_with_its_offset(tmp_path):
    f = Synth(no_cookie=True)
    f.sample(10, 100, cookie=1)
    f.deferred(10, 110, 1, U1)
    f.no_cookie = False
    f.sample(10, 120, cookie=7)
    path = f.save(str(tmp_path / "mixed.data"))
    with pytest.raises(FormatError) as err:
        stitch(path)
    assert "layout" in str(err.value) and "offset" in str(err.value)
    r = subprocess.run([sys.executable, "-m", "deferstitch", "report", path], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "offset" in r.stderr


def test_the_engine_leaves_no_cookie_files_to_python(tmp_path):
    f = Synth(no_cookie=True)
    f.sample(10, 100, cookie=1)
    f.deferred(10, 110, 1, U1)
    path = f.save(str(tmp_path / "nc.data"))
    assert probe_layout(path) == "no-cookie"
    if engine.available():
        with PerfData.open(path) as perf:
            assert "without cookies" in engine.unavailable(perf)
    # without the defer bit the probe looks at the first records only: this one is found there
    g = Synth(attrs=[make_attr(defer=False)], no_cookie=True)
    g.sample(10, 100)
    g.sample(10, 105, cookie=1)
    g.deferred(10, 110, 1, U1)
    path = g.save(str(tmp_path / "nobit.data"))
    out = {}
    for accel in ("1", "0"):
        r = subprocess.run([sys.executable, "-m", "deferstitch", "report", "--json", path], cwd=ROOT,
                           capture_output=True, text=True, env=dict(os.environ, DEFERSTITCH_ACCEL=accel))
        assert r.returncode == 0, r.stderr
        out[accel] = r.stdout
    assert out["1"] == out["0"] and '"stitched": 1,' in out["1"] and '"passed": 1,' in out["1"]


# -- the real captures, rewritten without cookies ------------------------------------------------
DEFERRED_SCENARIOS = [s for s in SCENARIOS if s != "baseline_fp_nodefer"]
PRECOOKIE = DATA / "precookie"      # lossy captures of our own (README there): -m 1 / -m 2, -a or not
LOSSY = sorted(p.name for p in PRECOOKIE.iterdir() if p.is_dir())     # carried here: never none

# Share (%) of the samples that have a stack in perf 7.2's answer (its cookies) that the
# rewrites stitch, at least: docs/precookie.md gives the same figures. "strip": cookies taken
# out (a 7.x kernel's stacks, one per entry); "series": as the series before the cookie patch
# writes them (tests/nocookie.py precookie_task_events).
FLOORS = {
    ("a_per_task", "strip"): 98, ("a_per_task", "series"): 99,
    ("b_per_task", "strip"): 96, ("b_per_task", "series"): 99,
    ("c_per_task", "strip"): 49, ("c_per_task", "series"): 99,
    ("syswide", "strip"): 97, ("syswide", "series"): 98,
    ("lost_per_task", "strip"): 56, ("lost_per_task", "series"): 71,
    ("pipe", "strip"): 97, ("pipe", "series"): 99,
    ("compressed", "strip"): 96, ("compressed", "series"): 99,
    ("two_events_cpu_task", "strip"): 80, ("two_events_cpu_task", "series"): 99,
    ("p_task_m1", "strip"): 13, ("p_task_m1", "series"): 20,
    ("p_task_m2", "strip"): 14, ("p_task_m2", "series"): 21,
    ("p_sys_m1", "strip"): 0, ("p_sys_m1", "series"): 0,
    ("p_sys_m2", "strip"): 33, ("p_sys_m2", "series"): 33,
    ("lost_syswide", "strip"): 26, ("lost_syswide", "series"): 28,
    ("p_task_m1_many", "strip"): 18, ("p_task_m1_many", "series"): 25,
    ("p_task_m2_many", "strip"): 10, ("p_task_m2_many", "series"): 12,
    ("p_task_m2_long", "strip"): 1, ("p_task_m2_long", "series"): 3,
}
REWRITES = {"strip": strip_cookies, "series": precookie_task_events}


def _source(scenario, tmp_path):
    """(the original capture, its folder with perf 7.2's script-fields-nomerge.txt.xz)."""
    if scenario in SCENARIOS:
        return capture(scenario)
    folder = PRECOOKIE / scenario
    xz = next(folder.glob("*.data.xz"))
    path = tmp_path / xz.name[:-3]
    path.write_bytes(lzma.open(xz).read())
    return path, folder


def _against_perf(folder, got):
    """Compare ``got`` (a rewrite's samples) with perf 7.2's cookie answer on the original
    (tests/oracle.py): every stitched sample must carry exactly perf's chain, never another
    entry's stack. Returns (stitched, samples that have a stack in perf's answer)."""
    records, capped = parse_script_fields(folder / "script-fields-nomerge.txt.xz")
    expected = {}
    for tid, usec, ips, has in cookie_rule(records, capped):
        has = True if ips is None else has
        expected.setdefault(tid, []).append((usec, ips, has))
    stitched = have = 0
    by_tid = ours_by_tid(got)
    # zip() below stops at the shorter side: each task has as many samples as perf printed
    # (more only where perf's text was cut at 16 MiB)
    assert set(expected) <= set(by_tid) and (capped or set(by_tid) == set(expected))
    for tid, ours in by_tid.items():
        theirs = expected.get(tid, [])
        assert len(ours) >= len(theirs) if capped else len(ours) == len(theirs), tid
        for (usec, ips, s), (t_usec, t_ips, has) in zip(ours, theirs):
            assert usec == t_usec, (tid, usec, t_usec)
            if has and t_ips is None:
                continue                # past the 16 MiB cap of perf's text: unknown
            have += bool(has)
            if s.outcome == STITCHED:
                assert has and ips == t_ips, (tid, usec)
                stitched += 1
    assert have > 0
    return stitched, have


@pytest.mark.parametrize("how", sorted(REWRITES))
@pytest.mark.parametrize("scenario", DEFERRED_SCENARIOS + LOSSY)
def test_rewrites_stitch_only_perfs_own_stacks_at_the_documented_rates(scenario, how, tmp_path):
    """Every capture, and the lossy ones of tests/data/precookie (tens of LOST records each),
    rewritten without cookies: no sample gets another entry's stack, with LOST records anywhere,
    and the share stitched is at least the documented one (>= 90 % where nothing was lost, but
    for the layouts that leave samples in doubt: see docs/precookie.md)."""
    src, folder = _source(scenario, tmp_path)
    dst = str(tmp_path / "nc.data")
    REWRITES[how](str(src), dst)
    got, rep, _ = stitch(dst)
    assert rep.deferred_layout == "no-cookie" and rep.conserved() and len(got) == rep.samples
    stitched, have = _against_perf(folder, got)
    share = 100.0 * stitched / have
    held = rep.extra["no_cookie_held_back"]
    print("%s %s: %d of %d (%.1f%%) lost=%d held back %s" % (scenario, how, stitched, have, share,
                                                            rep.lost_records, held))
    assert share >= FLOORS[scenario, how]
    assert sum(held.values()) <= rep.unmatched.get(LOST_NO_COOKIE, 0)
    if rep.lost_records == 0:
        assert not held


def test_stitch_of_a_no_cookie_capture_is_read_by_perf_61(tmp_path):
    perf = shutil.which("perf")
    if perf is None:
        pytest.skip("perf 6.1 not installed: apt-get install linux-perf")
    src, _folder = capture("compressed")
    nc, out = str(tmp_path / "nc.data"), str(tmp_path / "st.data")
    strip_cookies(src, nc)
    r = subprocess.run([sys.executable, "-m", "deferstitch", "stitch", nc, "-o", out, "-q"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    _samples, rep, _ = stitch(nc)
    p = subprocess.run([perf, "script", "-i", out, "-F", "tid,ip"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    blocks = [b for b in p.stdout.split("\n\n") if b.strip()]
    assert len(blocks) == rep.samples
    user = [b for b in blocks if any(len(line.split()[0]) < 16 for line in b.splitlines()[1:])]
    assert len(user) >= rep.stitched        # every stitched sample shows its user frames


def test_the_perf_plugin_stitches_a_no_cookie_file_in_perf_7(tmp_path):
    """perf 7.x shows such a chain's kernel part only (the marker ends it): the plugin adds ours."""
    tool = need_sid_perf()
    src, _folder = capture("compressed")
    strip_cookies(src, str(tmp_path / "nc.data"))
    p = subprocess.run([tool, "script", "-i", "./nc.data", "-s", str(ROOT / "perf_scripts" / "stitch.py"),
                        "--", "-o", "./out.txt", "--json", "./rep.json"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600,
                       env={**os.environ, "SID_BINDS": "%s:%s" % (ROOT, ROOT)})
    assert p.returncode == 0, p.stderr[-2000:]
    ours = subprocess.run([sys.executable, "-m", "deferstitch", "script", "--no-symbols",
                           str(tmp_path / "nc.data")], cwd=ROOT, capture_output=True, text=True)
    assert ours.returncode == 0, ours.stderr

    def ips(text):
        return [[ln.split()[0] for ln in b.splitlines()[1:]] for b in text.split("\n\n") if b.strip()]
    assert ips((tmp_path / "out.txt").read_text()) == ips(ours.stdout)
    rep = json.loads((tmp_path / "rep.json").read_text())
    assert rep["deferred_layout"] == "no-cookie" and rep["conserved"] and rep["stitched"] > 0


# -- random streams: a model of the kernel, its cookies the truth ---------------------------------
@hs.composite
def streams(draw):
    """Events of a few tasks, each a run of kernel entries as the kernel writes them: samples
    (one at least, as a stack is written only when asked for; any in user mode, as a request may
    outlive a return to user space), the stack (maybe lost, a LOST record right after), samples
    after it (same entry), maybe the same stack again (a request queued anew before the cookie
    patch); exits."""
    stacks = [tuple(range(0x1000 * k, 0x1000 * k + k)) for k in range(1, 4)]   # few: equal ones meet
    tasks = {tid: [] for tid in range(1, draw(hs.integers(1, 3)) + 1)}
    cookie = 0
    for tid, evs in tasks.items():
        for _entry in range(draw(hs.integers(1, 5))):
            cookie += 1
            for _ in range(draw(hs.integers(1, 3))):
                evs.append(("sample", cookie, draw(hs.booleans())))
            frames = draw(hs.sampled_from(stacks))
            lost = draw(hs.integers(0, 9)) == 0
            evs.append(("lost",) if lost else ("stack", cookie, frames))
            for _ in range(draw(hs.integers(0, 2))):
                evs.append(("sample", cookie, False))       # after the stack, same entry
            if not lost and draw(hs.integers(0, 3)) == 0:
                evs.append(("stack", cookie, frames))
        if draw(hs.booleans()):
            evs.append(("exit",))
    out = []                                # interleave the tasks, keeping each one's order
    while any(tasks.values()):
        tid = draw(hs.sampled_from(sorted(t for t, e in tasks.items() if e)))
        out.append((tid,) + tasks[tid].pop(0))
    return out


def _replay(events, no_cookie, requeued=False):
    got = []
    st = Stitcher(got.append, exit_grace=0)
    if no_cookie:
        st.use_task_order(requeued)
    for t, (tid, kind, *rest) in enumerate(events):
        if kind == "sample":
            cookie, user_mode = rest
            st.sample(Sample(tid, tid, 0, t, (), NO_COOKIE if no_cookie else cookie,
                             user_mode=user_mode))
        elif kind == "stack":
            cookie, frames = rest
            st.deferred(DeferredStack(tid, tid, None if no_cookie else cookie, t, frames))
        elif kind == "lost":
            st.lost()
        else:
            st.exit(tid, t)
    st.finish()
    return sorted(got, key=lambda s: s.time), st.report


def _known(events):
    """What the generator knows of ``events``: each entry's frames (cookie -> the stack written
    for it; none when it was lost), and the samples that task order must stitch (their times):
    where nothing was lost, a sample taken before its entry's stack, its task having written no
    stack since it was last seen in user space, so that the next stack of its task is its own
    and no other is in doubt."""
    frames = {c: f for _tid, kind, *rest in events if kind == "stack" for c, f in [rest]}
    lost = any(kind == "lost" for _tid, kind, *_ in events)
    must, written, stale = set(), set(), {}
    for t, (tid, kind, *rest) in enumerate(events):
        if kind == "sample":
            cookie, user_mode = rest
            if user_mode:
                stale[tid] = False
            if not lost and cookie in frames and cookie not in written and not stale.get(tid):
                must.add(t)
        elif kind == "stack":
            written.add(rest[0])
            stale[tid] = True
    return frames, must


@settings(max_examples=300, deadline=None)
@given(streams())
def test_random_streams_never_get_a_wrong_stack(events):
    """Every stitched sample carries its own entry's frames (the generator's), and every sample
    the rules can prove is stitched: a stitcher that never stitches fails here."""
    frames, must = _known(events)
    got, rep = _replay(events, no_cookie=True)
    assert rep.conserved() and len(got) == sum(ev[1] == "sample" for ev in events)
    for s in got:
        cookie = events[s.time][2]
        if s.outcome == STITCHED:
            assert tuple(s.user) == frames.get(cookie), (s.time, events)
        if s.time in must:
            assert s.outcome == STITCHED, (s.time, s.outcome, s.reason, events)


@hs.composite
def per_event_streams(draw):
    """Events as the series before the cookie patch writes them for task events (v13 "perf:
    Support deferred user callchains", kernel/events/core.c deferred_request() and
    perf_event_callchain_deferred()): each event has its own task work, which writes that event's
    stack of the entry on the way out (so two events, two stacks of one entry); a sample whose
    event's work already ran in this entry queues it again (same frames: the entry's unwind
    cache). A user-mode sample is deferred too: the interrupt from user space is its own entry.
    The stitcher does not look at which event wrote a stack: its task-order rules must hold
    whoever wrote it."""
    stacks = [tuple(range(0x1000 * k, 0x1000 * k + k)) for k in range(1, 4)]
    tasks = {}
    cookie = 0
    for tid in range(1, draw(hs.integers(1, 3)) + 1):
        evs = tasks[tid] = []
        for _entry in range(draw(hs.integers(1, 5))):
            cookie += 1
            frames = draw(hs.sampled_from(stacks))
            pending = set()                 # events whose task work is queued
            user = draw(hs.booleans())
            for _ in range(1 if user else draw(hs.integers(1, 3))):
                evs.append(("sample", cookie, user))
                pending.add(draw(hs.integers(0, 1)))
            late = 0
            while pending:                  # the way out: each queued work writes its stack
                pending.discard(draw(hs.sampled_from(sorted(pending))))
                lost = draw(hs.integers(0, 9)) == 0
                evs.append(("lost",) if lost else ("stack", cookie, frames))
                if late < 3 and draw(hs.integers(0, 2)) == 0:     # sampled in between: queued again
                    late += 1
                    evs.append(("sample", cookie, False))
                    pending.add(draw(hs.integers(0, 1)))
        if draw(hs.booleans()):
            evs.append(("exit",))
    out = []
    while any(tasks.values()):
        tid = draw(hs.sampled_from(sorted(t for t, e in tasks.items() if e)))
        out.append((tid,) + tasks[tid].pop(0))
    return out


@settings(max_examples=200, deadline=None)
@given(per_event_streams())
def test_per_event_stacks_of_the_precookie_series_never_give_a_wrong_stack(events):
    """... with the doubt after a stack (any kernel) or without it (``requeued``: this kernel),
    where nothing was lost then every sample gets its entry's stack. The frames are the
    generator's (not the stitcher's cookie mode)."""
    frames = {c: f for _tid, kind, *rest in events if kind == "stack" for c, f in [rest]}
    lost = any(ev[1] == "lost" for ev in events)
    for requeued in (False, True):
        got, rep = _replay(events, no_cookie=True, requeued=requeued)
        assert rep.conserved() and len(got) == sum(ev[1] == "sample" for ev in events)
        for s in got:
            cookie = events[s.time][2]
            if s.outcome == STITCHED:
                assert tuple(s.user) == frames.get(cookie), (s.time, events)
            else:
                assert lost or not requeued, (s.time, s.outcome, s.reason, events)
