"""Stitching on every real capture equals the cookie rule applied to perf 7.2's own output.

That is perf 7.2's merged output plus the samples perf leaves unmerged although their stack is
in the file (taken after it was written); every sample without a stack is unmatched, with a
reason, and the counts add up.
"""
import pytest

from conftest import SCENARIOS, capture
from collect import ours_by_tid, stitch
from oracle import cookie_rule, parse_script_fields
from deferstitch.model import PASSED, STITCHED, UNMATCHED


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_stitched_ips_equal_the_cookie_rule(scenario):
    path, folder = capture(scenario)
    records, capped = parse_script_fields(folder / "script-fields-nomerge.txt.xz")
    expected = cookie_rule(records, capped)
    samples, rep, _ = stitch(path)
    assert rep.conserved()
    assert rep.samples == len(samples)
    ours = ours_by_tid(samples)
    seen = {}
    compared = after_stack = 0
    for tid, usec, ips, has_block in expected:
        i = seen.get(tid, 0)
        seen[tid] = i + 1
        assert i < len(ours.get(tid, ())), "sample %d of tid %d missing" % (i, tid)
        our_usec, our_ips, s = ours[tid][i]
        assert our_usec == usec, (tid, i)
        if ips is None:
            continue                    # past the 16 MiB cap of the oracle: unknown
        assert our_ips == ips, "tid %d sample %d at %d us: %s" % (tid, i, usec, s)
        if has_block is None:
            assert s.outcome == PASSED
        elif has_block:
            assert s.outcome == STITCHED
            after_stack += s.after_stack
        else:
            assert s.outcome == UNMATCHED and s.reason
        compared += 1
    if not capped:
        assert sum(seen.values()) == rep.samples
    assert compared > 0.4 * rep.samples
    if scenario != "baseline_fp_nodefer":
        assert after_stack > 0, "the samples perf 7.2 leaves unmerged are stitched"


def test_lost_records_give_deferred_lost():
    path, _ = capture("lost_per_task")
    _, rep, _ = stitch(path)
    lost = rep.unmatched["deferred-lost"] + rep.unmatched["deferred-lost-after-lost-records"]
    assert lost > 0 and rep.lost_records == 33


def test_every_sample_is_counted_once_on_every_capture():
    for scenario in sorted(SCENARIOS):
        path, _ = capture(scenario)
        samples, rep, _ = stitch(path)
        assert rep.samples == len(samples) == len({id(s) for s in samples})
        assert rep.samples == rep.stitched + rep.passed + sum(rep.unmatched.values()), scenario
        assert sum(n for t, n in rep.extra["records"].items() if t == "SAMPLE") == rep.samples
