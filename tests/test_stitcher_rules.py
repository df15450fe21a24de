"""The cookie rules on synthetic streams (the seeds' scenarios and every reason)."""
import pytest

from collect import stitch
from synth import Synth, make_attr
from deferstitch.model import PASSED, STITCHED, UNMATCHED

U_A = [0x401000, 0x402000]
U_B = [0x403000, 0x404000]


def outcomes(samples):
    return [(s.tid, s.time, s.outcome, s.reason, tuple(s.user or ())) for s in samples]


def test_seed_lost_stack_is_not_glued_to_the_next_entry(tmp_path):
    # cookie A requested, its stack dropped; back to user, kernel again, request B dropped too;
    # then B's stack recorded. Attaching by tid alone would give A's samples B's stack.
    f = Synth()
    f.sample(10, 100, cookie=0xA)
    f.sample(10, 110, cookie=0xA)
    f.lost(150)
    f.deferred(10, 300, 0xB, U_B)
    samples, rep, _ = stitch(f.save(tmp_path / "seed1.data"))
    assert [s.outcome for s in samples] == [UNMATCHED, UNMATCHED]
    assert {s.reason for s in samples} == {"deferred-lost-after-lost-records"}
    assert rep.orphan_deferred == 1 and rep.conserved()


def test_seed_three_and_one(tmp_path):
    f = Synth()
    for t in (100, 110, 120):
        f.sample(7, t, cookie=123)
    f.deferred(7, 130, 123, U_A)
    f.sample(7, 200, cookie=124)
    f.deferred(7, 210, 124, U_B)
    samples, rep, _ = stitch(f.save(tmp_path / "seed2.data"))
    assert [tuple(s.user) for s in samples] == [tuple(U_A)] * 3 + [tuple(U_B)]
    assert rep.stitched == 4 and rep.stitched_after_stack == 0


def test_sample_after_its_stack_gets_that_stack(tmp_path):
    f = Synth()
    f.sample(7, 100, cookie=5)
    f.deferred(7, 120, 5, U_A)
    f.sample(7, 125, cookie=5)        # in the unwinder / task work: same entry, same cookie
    f.deferred(7, 128, 5, U_A)        # a duplicate stack must not stitch twice
    f.sample(7, 300, cookie=6)        # the next entry never gets a stack
    samples, rep, _ = stitch(f.save(tmp_path / "after.data"))
    assert outcomes(samples) == [(7, 100, STITCHED, None, tuple(U_A)),
                                 (7, 125, STITCHED, None, tuple(U_A)),
                                 (7, 300, UNMATCHED, "stream-ended", ())]
    assert rep.stitched_after_stack == 1 and rep.duplicate_deferred == 1


def test_never_by_tid_alone_with_many_tasks(tmp_path):
    f = Synth()
    f.sample(1, 100, cookie=0x11)
    f.sample(2, 101, cookie=0x11)            # same cookie value, another task
    f.deferred(2, 150, 0x11, U_B)
    f.deferred(1, 160, 0x11, U_A)
    samples, _rep, _ = stitch(f.save(tmp_path / "tids.data"))
    assert {s.tid: tuple(s.user) for s in samples} == {1: tuple(U_A), 2: tuple(U_B)}


def test_exit_and_its_grace(tmp_path):
    f = Synth()
    f.sample(3, 100, cookie=1)
    f.exit(3, 110)
    f.deferred(3, 120, 1, U_A)            # the last stack may follow EXIT (task work in do_exit)
    f.sample(4, 130, cookie=2)
    f.exit(4, 140)
    f.sample(5, 2_000_000_000, cookie=None, kernel=[], user=U_B)   # time passes: grace ends
    samples, rep, _ = stitch(f.save(tmp_path / "exit.data"))
    assert outcomes(samples)[:2] == [(3, 100, STITCHED, None, tuple(U_A)),
                                     (4, 130, UNMATCHED, "task-exited", ())]
    assert samples[2].outcome == PASSED and rep.conserved()


def test_max_pending_evicts_the_oldest(tmp_path):
    f = Synth()
    for i in range(50):
        f.sample(100 + i, 1000 + i, cookie=i + 1)
    samples, rep, _ = stitch(f.save(tmp_path / "many.data"), max_pending=10)
    assert rep.unmatched["evicted"] == 40 and rep.unmatched["stream-ended"] == 10
    assert [s.time for s in samples] == sorted(s.time for s in samples)
    assert rep.max_pending == 11


def test_output_is_time_ordered_across_cpus(tmp_path):
    # cpu1's buffer is drained after cpu0's: the stack (cpu1) is written before the sample in
    # the file, but it is later in time. FINISHED_ROUND ordering must put it after.
    f = Synth()
    f.deferred(9, 500, 0x77, U_A)          # cpu1 buffer, round 1
    f.sample(9, 400, cookie=0x77)          # cpu0 buffer, round 1
    f.round()
    f.sample(9, 600, cookie=0x78)
    f.round()
    samples, rep, _ = stitch(f.save(tmp_path / "order.data"))
    assert outcomes(samples)[0] == (9, 400, STITCHED, None, tuple(U_A))
    assert rep.conserved()


@pytest.mark.parametrize("endian", ["<", ">"])
def test_big_and_little_endian(tmp_path, endian):
    f = Synth(endian)
    f.sample(7, 100, cookie=9)
    f.deferred(7, 130, 9, U_A)
    samples, rep, _ = stitch(f.save(tmp_path / "e.data"))
    assert samples[0].outcome == STITCHED and tuple(samples[0].user) == tuple(U_A)


def test_markers_inside_a_deferred_stack_are_dropped_and_counted(tmp_path):
    f = Synth()
    f.sample(7, 100, cookie=9)
    f.deferred(7, 130, 9, [0x401000, (1 << 64) - 1, 0x402000])
    samples, rep, _ = stitch(f.save(tmp_path / "m.data"))
    assert tuple(samples[0].user) == (0x401000, 0x402000) and rep.dropped_frames == 1


def test_two_events_with_identifier(tmp_path):
    from deferstitch.abi import consts as C
    from synth import BASIC
    a = make_attr(sample_type=BASIC | C.PERF_SAMPLE_IDENTIFIER | C.PERF_SAMPLE_CPU)
    b = make_attr(sample_type=BASIC | C.PERF_SAMPLE_IDENTIFIER, config=1)
    f = Synth(attrs=[a, b])
    f.sample(7, 100, cookie=9, attr_index=1)
    f.sample(7, 101, cookie=9, attr_index=0, cpu=1)
    f.deferred(7, 130, 9, U_A, attr_index=0)
    samples, rep, _ = stitch(f.save(tmp_path / "two.data"))
    assert [s.ref.entry.name for s in samples] == ["task-clock", "cpu-clock"]
    assert [s.cpu for s in samples] == [None, 1]
    assert rep.stitched == 2
