"""`deferstitch script`, `folded` and `report` on real captures, against perf 7.2's own text."""
import json
import lzma

import pytest

from conftest import capture, run_cli
from perf_text import assert_script_equals_perf, parse_script

@pytest.mark.parametrize("scenario", ["a_per_task", "b_per_task", "syswide", "lost_per_task"])
def test_script_layout_equals_perf_script(scenario, tmp_path):
    path, folder = capture(scenario)
    r = run_cli("script", path, "-q", "--no-symbols")
    assert r.returncode == 0, r.stderr
    assert_script_equals_perf(r.stdout.decode(),
                              lzma.open(folder / "script.txt.xz").read().decode("utf-8", "replace"))


def test_folded_counts_every_sample():
    """The folded counts add up to the samples perf script printed (perf's count, not only our
    report's)."""
    path, folder = capture("b_per_task")
    r = run_cli("folded", path, "-q")
    assert r.returncode == 0
    lines = r.stdout.decode().splitlines()
    rep = json.loads(run_cli("report", path, "--json").stdout)
    perf_samples = len(parse_script(lzma.open(folder / "script.txt.xz").read().decode("utf-8", "replace")))
    assert sum(int(l.rsplit(" ", 1)[1]) for l in lines) == rep["samples"] == perf_samples
    assert lines == sorted(lines)
    assert all(l.startswith("workload_b;") for l in lines)
    # root first: the user outermost frame is libc's start, the kernel frames at the leaf end
    top = max(lines, key=lambda l: int(l.rsplit(" ", 1)[1]))
    assert top.split(";")[1] == "[libc.so.6]"


def test_report_json_and_fail_on_unmatched():
    path, _ = capture("lost_per_task")
    r = run_cli("report", path, "--json")
    d = json.loads(r.stdout)
    for key in ("samples", "stitched", "stitched_after_stack", "passed", "unmatched",
                "deferred_records", "orphan_deferred"):
        assert key in d
    assert d["samples"] == d["stitched"] + d["passed"] + sum(d["unmatched"].values())
    assert r.returncode == 0
    assert run_cli("report", path, "--fail-on-unmatched", "-q").returncode == 1
    path, _ = capture("baseline_fp_nodefer")
    assert run_cli("report", path, "--fail-on-unmatched", "-q").returncode == 0


def test_report_tables():
    path, _ = capture("lost_per_task")
    r = run_cli("report", path)
    text = r.stdout.decode()
    for needle in ("stitched", "unmatched: deferred-lost-after-lost-records", "first unmatched",
                   "of which after its stack was written", "workload_b"):
        assert needle in text
