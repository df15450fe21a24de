"""speedscope and pprof exports on real captures, checked with their own schemas."""
import json
import lzma
import os
import shutil
import subprocess
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from conftest import TEST_CACHE, capture, run_cli
from google_pprof import read_profile
from perf_text import parse_script

SPEEDSCOPE = "speedscope@1.25.0"
CACHE = TEST_CACHE


def speedscope_schema():
    """file-format-schema.json from the speedscope npm package (npm pack, cached)."""
    target = CACHE / "speedscope-file-format-schema.json"
    if not target.exists():
        if shutil.which("npm") is None:
            pytest.skip("npm not installed: apt-get install npm (for speedscope's JSON schema)")
        CACHE.mkdir(parents=True, exist_ok=True)
        p = subprocess.run(["npm", "pack", SPEEDSCOPE, "--pack-destination", str(CACHE)],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            pytest.skip("npm pack %s failed: %s" % (SPEEDSCOPE, p.stderr.strip()[-200:]))
        tgz = CACHE / p.stdout.strip().splitlines()[-1]
        with tarfile.open(tgz) as t:
            member = t.extractfile("package/dist/release/file-format-schema.json")
            target.write_bytes(member.read())
    return json.loads(target.read_text())


def report(path):
    return json.loads(run_cli("report", path, "--json").stdout)


@pytest.mark.parametrize("scenario", ["b_per_task", "lost_per_task", "syswide"])
def test_speedscope_follows_its_schema(scenario, tmp_path):
    import jsonschema
    path, _ = capture(scenario)
    out = tmp_path / "p.speedscope.json"
    r = run_cli("export", path, "--format", "speedscope", "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    doc = json.loads(text)
    jsonschema.validate(doc, speedscope_schema())
    assert text == json.dumps(doc) + "\n"      # written piece by piece as json.dump writes it
    rep = report(path)
    assert sum(len(p["samples"]) for p in doc["profiles"]) == rep["samples"]
    for prof in doc["profiles"]:
        assert len(prof["weights"]) == len(prof["samples"]) and prof["endValue"] == sum(prof["weights"])
    frames = doc["shared"]["frames"]
    biggest = max(doc["profiles"], key=lambda p: len(p["samples"]))
    roots = Counter(frames[s[0]]["name"] for s in biggest["samples"] if s)
    assert roots.most_common(1)[0][0] == "[libc.so.6]"      # root first: the thread start


@pytest.mark.parametrize("scenario", ["lost_per_task", "two_events_cpu_task"])
def test_pprof_decodes_back(scenario, tmp_path):
    path, folder = capture(scenario)
    out = tmp_path / "p.pb.gz"
    r = run_cli("export", path, "--format", "pprof", "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    perf_samples = len(parse_script(lzma.open(folder / "script.txt.xz").read().decode("utf-8", "replace")))
    prof = read_profile(out)
    st = prof.string_table
    assert st[0] == ""
    assert [(st[v.type], st[v.unit]) for v in prof.sample_type] == [("samples", "count"), ("cpu", "nanoseconds")]
    rep = report(path)
    # identical samples are merged (values summed), as pprof does
    assert sum(s.value[0] for s in prof.sample) == rep["samples"] == perf_samples > len(prof.sample)
    keys = [(tuple(s.location_id), tuple((l.key, l.str, l.num) for l in s.label)) for s in prof.sample]
    assert len(set(keys)) == len(keys)
    loc_ids = {l.id for l in prof.location}
    fn_ids = {f.id for f in prof.function}
    map_ids = {m.id for m in prof.mapping}
    assert 0 not in loc_ids | fn_ids | map_ids
    assert all(l.mapping_id in map_ids and l.line[0].function_id in fn_ids for l in prof.location)
    assert all(set(s.location_id) <= loc_ids for s in prof.sample)
    reasons = Counter()
    for s in prof.sample:
        for lab in s.label:
            if st[lab.key] == "reason":
                reasons[st[lab.str]] += s.value[0]
    assert dict(reasons) == rep["unmatched"]
    periods = sum(s.value[1] for s in prof.sample)
    assert periods > 0


def real_pprof():
    """google/pprof built from Debian's sources (golang-go, golang-github-google-pprof-dev)."""
    target = CACHE / "pprof"
    if target.exists():
        return str(target)
    if shutil.which("go") is None or not Path("/usr/share/gocode/src/github.com/google/pprof").is_dir():
        pytest.skip("pprof not available: apt-get install golang-go golang-github-google-pprof-dev")
    CACHE.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GOPATH": "/usr/share/gocode", "GO111MODULE": "off", "GOCACHE": str(CACHE / "gocache")}
    p = subprocess.run(["go", "build", "-o", str(target), "github.com/google/pprof"], env=env,
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        pytest.fail("building pprof failed: %s" % p.stderr[-1000:])
    return str(target)


def test_the_real_pprof_reads_it(tmp_path):
    pprof = real_pprof()
    path, _ = capture("lost_per_task")
    out = tmp_path / "p.pb.gz"
    assert run_cli("export", path, "--format", "pprof", "-o", out, "-q").returncode == 0
    rep = report(path)

    def total(*args):
        p = subprocess.run([pprof, "-sample_index=samples", "-nodefraction=0", "-nodecount=1000000",
                            *args, "-top", str(out)],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        line = next(l for l in p.stdout.splitlines() if l.startswith("Showing nodes"))
        return int(line.split(" accounting for ")[1].split(",")[0])   # what the filter kept

    assert "Total samples = %d" % rep["samples"] in subprocess.run(
        [pprof, "-sample_index=samples", "-top", str(out)], capture_output=True, text=True).stdout
    for reason, n in rep["unmatched"].items():
        assert total("-tagfocus=reason=" + reason) == n
