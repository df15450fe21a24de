"""`perf script -s perf_scripts/stitch.py` inside the REAL perf: 7.x (sid, through the rig) on
the raw captures in both merge modes, and 6.1 (bookworm) on our stitched files."""
import json
import lzma
import os
import shutil
import subprocess

import pytest

from conftest import CAPTURES, ROOT, SCENARIOS, SID_ROOTFS, capture, need_perf61, need_sid_perf, run_cli
from oracle import assert_chains_follow_cookie_rule
from perf_text import parse_script

SCRIPT = str(ROOT / "perf_scripts" / "stitch.py")
ROOTFS = str(SID_ROOTFS)


@pytest.fixture(scope="module")
def kallsyms(tmp_path_factory):
    d = tmp_path_factory.mktemp("ks")
    (d / "kallsyms").write_bytes(lzma.open(CAPTURES / "kallsyms.xz").read())
    return d / "kallsyms"


def perf7_plugin(tmp_path, data, kallsyms, *perf_args, script_args=()):
    tool = need_sid_perf()
    shutil.copy(kallsyms, tmp_path / "kallsyms")
    out, rep = tmp_path / "out.txt", tmp_path / "rep.json"
    p = subprocess.run([tool, "script", "-i", data, "--kallsyms=./kallsyms", *perf_args, "-s", SCRIPT,
                        "--", "-o", str(out), "--json", str(rep), *script_args],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "SID_BINDS": "%s:%s" % (ROOT, ROOT)})
    assert p.returncode == 0, p.stderr[-2000:]
    return out.read_text(), json.loads(rep.read_text()), p


def stacks(text):
    """{(tid, time): [(ip, name, dso)]}, names of [vdso] frames left out: perf names those from
    its own process's vdso, not the recorded one."""
    return {k: [(ip, None if dso == "[vdso]" else name, dso) for ip, name, dso in frames]
            for k, (_h, frames) in parse_script(text).items()}


def core_report(d):
    """The report without what only the plugin counts (perf's samples it served, and how)."""
    return {k: ({n: c for n, c in v.items() if n != "perf_script"} if k == "perf" else v)
            for k, v in d.items()}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_perf7_both_modes_give_the_same_stacks_and_the_cli_report(scenario, tmp_path, kallsyms):
    path, folder = capture(scenario)
    shutil.copy(path, tmp_path / "in.data")
    merged, rep_m, _ = perf7_plugin(tmp_path, "in.data", kallsyms)
    nomerge, rep_n, _ = perf7_plugin(tmp_path, "in.data", kallsyms, "--no-merge-callchains")
    a, b = stacks(merged), stacks(nomerge)
    assert a == b
    cli = json.loads(run_cli("report", path, "--json").stdout)
    assert core_report(rep_m) == core_report(rep_n) == cli
    served = rep_m["perf"]["perf_script"]
    assert served["unknown"] == 0
    assert served["we_stitched"] == cli["stitched_after_stack"]     # exactly the samples perf misses
    assert rep_n["perf"]["perf_script"]["we_stitched"] == cli["stitched"]
    got = [(tid, int(t.replace(".", "")), [f[0] for f in fr]) for (tid, t, n), fr in sorted(
        a.items(), key=lambda kv: (int(kv[0][1].replace(".", "")), kv[0][2]))]
    assert_chains_follow_cookie_rule(got, folder)


@pytest.mark.parametrize("scenario", ["a_per_task", "lost_per_task", "syswide", "compressed"])
def test_perf61_on_our_stitched_file_shows_the_same(scenario, tmp_path, kallsyms):
    perf, _ = need_perf61()
    path, _ = capture(scenario)
    shutil.copy(path, tmp_path / "in.data")
    merged, rep7, _ = perf7_plugin(tmp_path, "in.data", kallsyms)
    assert run_cli("stitch", path, "-o", tmp_path / "st.data", "-q").returncode == 0
    out, rep = tmp_path / "out61.txt", tmp_path / "rep61.json"
    sym = ["--symfs=%s" % ROOTFS] if os.path.isdir(ROOTFS) else []
    p = subprocess.run([perf, "script", "-i", "st.data", "--kallsyms=%s" % kallsyms, *sym, "-s", SCRIPT,
                        "--", "-o", str(out), "--json", str(rep)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    old, new = parse_script(out.read_text()), parse_script(merged)
    assert set(old) == set(new)
    for k in new:
        assert [f[0] for f in old[k][1]] == [f[0] for f in new[k][1]], k
    assert core_report(json.loads(rep.read_text())) == core_report(rep7)
    assert "report written by deferstitch stitch" in p.stderr


def test_folded_and_report_only(tmp_path, kallsyms):
    path, _ = capture("b_per_task")
    shutil.copy(path, tmp_path / "in.data")
    folded, rep, _ = perf7_plugin(tmp_path, "in.data", kallsyms, script_args=("--folded",))
    lines = folded.splitlines()
    assert sum(int(l.rsplit(" ", 1)[1]) for l in lines) == rep["samples"]
    assert all(l.startswith("workload_b;") for l in lines)
    only, _rep, p = perf7_plugin(tmp_path, "in.data", kallsyms, script_args=("--report",))
    assert only == "" and "of which after its stack was written" in p.stderr


def test_pipe_input_is_explained(tmp_path):
    tool = need_sid_perf()
    path, _ = capture("pipe")
    shutil.copy(path, tmp_path / "pipe.data")
    p = subprocess.run(["sh", "-c", "cat pipe.data | %s script -i - -s %s" % (tool, SCRIPT)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "SID_BINDS": "%s:%s" % (ROOT, ROOT)})
    assert p.returncode == 0, p.stderr[-1000:]
    assert "need the perf.data as a file" in p.stderr and "Traceback" not in p.stderr


def test_perf61_on_a_raw_pipe_capture_says_what_to_do(tmp_path):
    perf, _ = need_perf61()
    path, _ = capture("pipe")
    shutil.copy(path, tmp_path / "pipe.data")
    p = subprocess.run([perf, "script", "-i", "pipe.data", "-s", SCRIPT], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2
    assert "deferstitch stitch" in p.stderr and "Traceback" not in p.stderr


def test_missing_core_is_one_line(tmp_path):
    perf, _ = need_perf61()
    path, _ = capture("baseline_fp_nodefer")
    shutil.copy(SCRIPT, tmp_path / "stitch.py")
    assert run_cli("stitch", path, "-o", tmp_path / "in.data", "-q").returncode == 0
    p = subprocess.run([perf, "script", "-i", "in.data", "-s", "stitch.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": ""})
    assert p.returncode == 2 and "cannot import deferstitch" in p.stderr and "Traceback" not in p.stderr
