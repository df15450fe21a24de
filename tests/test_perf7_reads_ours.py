"""The REAL perf 7.x (Debian sid, through tools/sid-perf) on our files.

- a plain rewrite by our writer prints exactly what the original prints;
- the stitched file decodes to the cookie-rule oracle's chains, sample for sample.
"""
import shutil
import subprocess

import pytest

from conftest import SCENARIOS, capture, need_sid_perf, run_cli
from oracle import assert_chains_follow_cookie_rule
from perf_text import parse_dump_samples, parse_tid_time_ip
from test_perfdata import rewrite


def sid_perf(tool, cwd, *args):
    p = subprocess.run([tool, *args], capture_output=True, text=True, cwd=cwd, timeout=600)
    assert p.returncode == 0, (args, p.stderr[-2000:])
    return p.stdout


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_perf7_prints_the_same_from_our_rewrite(scenario, tmp_path):
    tool = need_sid_perf()
    path, _ = capture(scenario)
    shutil.copy(path, tmp_path / "orig.data")
    rewrite(path, tmp_path / "ours.data")
    a = sid_perf(tool, tmp_path, "script", "-i", "orig.data", "-F", "tid,time,ip")
    b = sid_perf(tool, tmp_path, "script", "-i", "ours.data", "-F", "tid,time,ip")
    # (for a pipe-mode original perf adds symbol names to -F ip: compare the samples, not text)
    assert parse_tid_time_ip(a) == parse_tid_time_ip(b) != []


@pytest.mark.parametrize("scenario", ["a_per_task", "lost_per_task", "syswide", "two_events_cpu_task"])
@pytest.mark.parametrize("mode", ["compat", "native"])
def test_perf7_decodes_our_stitched_chains(scenario, mode, tmp_path):
    tool = need_sid_perf()
    path, folder = capture(scenario)
    r = run_cli("stitch", path, "-o", tmp_path / "st.data", "-q", *(["--native"] if mode == "native" else []))
    assert r.returncode == 0, r.stderr
    assert_chains_follow_cookie_rule(
        parse_dump_samples(sid_perf(tool, tmp_path, "script", "-D", "-i", "st.data")), folder)
    sid_perf(tool, tmp_path, "report", "-i", "st.data", "--stdio")


def test_perf7_reads_a_sample_cut_to_64_kib(tmp_path):
    """perf 7.2 on a stitched sample cut to the record size (tests/synth.py oversized): the
    kernel part and the innermost user frames that fit."""
    from synth import oversized
    tool = need_sid_perf()
    path, chains = oversized(tmp_path / "big.data")
    assert run_cli("stitch", path, "-o", tmp_path / "st.data", "-q").returncode == 0
    dump = sid_perf(tool, tmp_path, "script", "-D", "-i", "st.data")
    got = {tid: ips for tid, _us, ips in parse_dump_samples(dump)}
    kernel, user = chains[10]
    kept = (0xFFFF - (48 + 8 * len(kernel))) // 8 - 1
    assert got[10] == kernel[1:] + user[:kept] and 0 < kept < len(user)
    assert got[11] == chains[11][0][1:] + chains[11][1] and len(got) == 3
