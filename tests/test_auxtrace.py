"""A perf.data with an AUX area trace (Intel PT): we do not decode it, and say so.

The recorded samples pass through; one warning line names the tracer (AUXTRACE_INFO's type, as
perf's enum auxtrace_type names it); ``report --json`` counts the AUXTRACE records and their bytes
under ``perf.auxtrace``. perf's own ``script -D`` (live when perf is here, else its kept lines in
tests/data/external) is the answer for the type, the records, their sizes and the samples.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from synth import Synth

DATA = ROOT / "tests" / "data" / "external"
PT = DATA / "perf_data_converter__perf.data.intel_pt-4.14"
KEPT_D = DATA / (PT.name + ".D.perf61.txt")


def ours(*args, accel="1"):
    return subprocess.run([sys.executable, "-m", "deferstitch", *args], cwd=ROOT,
                          capture_output=True, text=True,
                          env=dict(os.environ, DEFERSTITCH_ACCEL=accel))


def perf_dump():
    """perf's `script -D` lines for AUXTRACE_INFO, AUXTRACE and SAMPLE: live, else the kept ones."""
    perf = shutil.which("perf")
    if perf is not None:
        r = subprocess.run([perf, "script", "-D", "-i", str(PT)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-2000:]
        return r.stdout.splitlines()
    return KEPT_D.read_text().splitlines()[1:]


def perfs_answer():
    types, sizes, samples = [], [], 0
    for line in perf_dump():
        m = re.search(r"PERF_RECORD_AUXTRACE_INFO type: (\d+)", line)
        if m:
            types.append(int(m.group(1)))
        m = re.search(r"PERF_RECORD_AUXTRACE size: (0x[0-9a-f]+)", line)
        if m:
            sizes.append(int(m.group(1), 16))
        if "PERF_RECORD_SAMPLE" in line:
            samples += 1
    return types, sizes, samples


def test_report_counts_the_aux_trace_as_perf_reads_it():
    types, sizes, samples = perfs_answer()
    assert types and sizes and samples        # the file is what this test is about
    out = {}
    for accel in ("1", "0"):                   # the C engine and the Python path alike
        r = ours("report", "--json", "-q", str(PT), accel=accel)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        out[accel] = r.stdout
    assert out["1"] == out["0"]
    rep = json.loads(out["1"])
    assert rep["perf"]["auxtrace"] == {"types": types, "pmus": ["Intel PT"],
                                       "records": len(sizes), "bytes": sum(sizes)}
    assert rep["perf"]["records"]["AUXTRACE"] == len(sizes)
    assert rep["samples"] == rep["passed"] == samples and rep["conserved"]


@pytest.mark.parametrize("command", [["script", "--no-symbols"], ["report"], ["stitch", "-o", "OUT"],
                                     ["folded", "--no-symbols"]])
def test_one_warning_line_names_the_tracer(command, tmp_path):
    args = [str(tmp_path / "st.data") if a == "OUT" else a for a in command]
    r = ours(*args, str(PT))
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "AUX area trace" in ln]
    assert len(lines) == 1 and str(PT) in lines[0] and "Intel PT" in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    q = ours(*args, "-q", str(PT))
    assert q.returncode == 0 and "AUX" not in q.stderr, q.stderr
    if command[0] == "script":          # the recorded samples pass through, one line each
        assert len(r.stdout.splitlines()) == perfs_answer()[2]


def test_a_file_without_aux_trace_says_nothing_of_it(tmp_path):
    f = Synth()
    f.sample(10, 100, cookie=1)
    f.deferred(10, 110, 1, [0x401000])
    path = f.save(str(tmp_path / "plain.data"))
    r = ours("report", "--json", path)
    assert r.returncode == 0 and "AUX" not in r.stderr, r.stderr
    assert "auxtrace" not in json.loads(r.stdout)["perf"]
