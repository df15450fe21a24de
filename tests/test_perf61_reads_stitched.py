"""The REAL perf 6.1 reads our stitched rewrite of every capture, and prints the oracle's stacks.

perf 6.1 cannot open the originals at all ("file uses a more recent and unsupported ABI").
"""
import subprocess

import pytest

from conftest import SCENARIOS, capture, need_perf61, run_cli
from oracle import cookie_rule, parse_script_fields
from perf_text import parse_dump_samples


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_perf61_prints_the_stitched_stacks(scenario, tmp_path):
    perf, _version = need_perf61()
    path, folder = capture(scenario)
    out = tmp_path / "stitched.data"
    r = run_cli("stitch", path, "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    # perf 6.1 shows a user ip relative to its dso when it finds a file of that name here, so
    # read the chains perf 6.1 itself decoded from the records (-D), markers left out.
    p = subprocess.run([perf, "script", "-D", "-i", str(out)], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    got = [(tid, usec, ips[:127]) for tid, usec, ips in parse_dump_samples(p.stdout)]
    records, capped = parse_script_fields(folder / "script-fields-nomerge.txt.xz")
    expected = cookie_rule(records, capped)
    by_tid = {}
    for tid, usec, ips in got:
        by_tid.setdefault(tid, []).append((usec, ips))
    seen = {}
    for tid, usec, ips, _has in expected:
        i = seen.get(tid, 0)
        seen[tid] = i + 1
        g_usec, g_ips = by_tid[tid][i]
        assert g_usec == usec
        if ips is not None:
            assert g_ips == ips, (tid, i, usec)
    assert len(got) >= len(expected)
    for cmd in (["script"], ["report", "--stdio"]):
        p = subprocess.run([perf, *cmd, "-i", str(out)], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, (cmd, p.stderr[-2000:])
