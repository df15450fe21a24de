"""The REAL perf 6.1 reads our stitched rewrite of every capture, and prints the oracle's stacks.

perf 6.1 cannot open the originals at all ("file uses a more recent and unsupported ABI").
"""
import subprocess

import pytest

from conftest import SCENARIOS, capture, need_perf61, run_cli
from oracle import assert_chains_follow_cookie_rule
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
    assert_chains_follow_cookie_rule(parse_dump_samples(p.stdout), folder)
    for cmd in (["script"], ["report", "--stdio"]):
        p = subprocess.run([perf, *cmd, "-i", str(out)], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, (cmd, p.stderr[-2000:])


def test_perf61_reads_a_sample_cut_to_64_kib(tmp_path):
    """A stitched sample cut to perf's record size (tests/synth.py oversized): perf 6.1 decodes
    its kernel part and the innermost user frames that fit, and the exactly full one whole."""
    from synth import oversized
    perf, _version = need_perf61()
    path, chains = oversized(tmp_path / "big.data")
    out = tmp_path / "stitched.data"
    r = run_cli("stitch", path, "-o", out)
    assert r.returncode == 0 and b"1 stitched samples cut" in r.stderr, r.stderr
    p = subprocess.run([perf, "script", "-D", "-i", str(out)], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    got = {tid: ips for tid, _us, ips in parse_dump_samples(p.stdout)}
    kernel, user = chains[10]
    kept = (0xFFFF - (48 + 8 * len(kernel))) // 8 - 1
    assert got[10] == kernel[1:] + user[:kept] and 0 < kept < len(user)
    assert got[11] == chains[11][0][1:] + chains[11][1]
    assert len(got) == 3
