"""deferstitch fleet on Dask, against the sequential answer: its folded lines equal the sum of
``deferstitch folded`` over the good inputs (same symbol options), whatever the workers, on a
LocalCluster, on a real ``dask scheduler`` with two ``dask worker`` processes, and when a worker
is killed mid-run; a corrupt input costs only itself."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from conftest import ROOT, capture, need_built, run_cli
from google_pprof import read_profile

try:
    import distributed      # noqa: F401
    HAVE_DASK = True
except ImportError:
    HAVE_DASK = False
# only on the tests that run Dask: the one-line answer without it must run where it is absent
dask = pytest.mark.skipif(not HAVE_DASK, reason="Dask not installed: pip install 'deferstitch[fleet]'")


@pytest.fixture
def symbols(capture_symbols):
    return capture_symbols


def folded_lines(text):
    out = Counter()
    for line in text.splitlines():
        stack, n = line.rsplit(" ", 1)
        out[stack] += int(n)
    return out


def sequential(paths, symbols, times=1):
    total = Counter()
    for p in paths:
        res = run_cli("folded", p, *symbols)
        assert res.returncode == 0, res.stderr
        for _ in range(times):
            total.update(folded_lines(res.stdout.decode()))
    return total


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Three real captures, a truncated one and a file that is no perf.data, in one directory."""
    d = tmp_path_factory.mktemp("fleet")
    good = []
    for scenario in ("a_per_task", "b_per_task", "lost_per_task"):
        path, _ = capture(scenario)
        good.append(d / (scenario + ".data"))
        shutil.copy(path, good[-1])
    (d / "zz-truncated.data").write_bytes(good[0].read_bytes()[:5000])
    (d / "zz-notes.txt").write_text("not a perf.data\n")
    return d, good


@dask
def test_local_cluster_equals_the_sequential_answer(tmp_path, inputs, symbols):
    d, good = inputs
    want = sequential(good, symbols)
    outs = {}
    for workers in (1, 2):
        out, rep = tmp_path / ("w%d.folded" % workers), tmp_path / ("w%d.json" % workers)
        res = run_cli("fleet", d, "-o", out, "--report", rep, "--workers", workers, *symbols)
        assert res.returncode == 0, res.stderr
        outs[workers] = out.read_text()
        assert folded_lines(outs[workers]) == want
    assert outs[1] == outs[2]          # sorted lines, the same bytes
    report = json.loads(rep.read_text())
    rows = {os.path.basename(r["path"]): r for r in report["inputs"]}
    assert len(rows) == 5 and report["bad_inputs"] == 2
    assert "offset" in rows["zz-truncated.data"]["error"] and rows["zz-notes.txt"]["error"]
    totals = report["totals"]
    single = [json.loads(run_cli("report", p, "--json").stdout) for p in good]
    for key in ("samples", "stitched", "stitched_after_stack", "passed", "lost_records"):
        assert totals[key] == sum(s[key] for s in single)
    for p, s in zip(good, single):
        assert [rows[p.name][k] for k in ("samples", "stitched", "passed", "unmatched")] == \
            [s["samples"], s["stitched"], s["passed"], s["unmatched"]]
    assert totals["unmatched"] == dict(sum((Counter(s["unmatched"]) for s in single), Counter()))
    assert totals["samples"] == totals["stitched"] + totals["passed"] + sum(totals["unmatched"].values())
    assert totals["conserved"] is True and rows["a_per_task.data"]["hostname"]
    res = run_cli("fleet", d, "-o", tmp_path / "strict.folded", "--workers", 1, "--strict", *symbols)
    assert res.returncode == 2 and b"zz-truncated.data" in res.stderr


@dask
def test_pprof_and_speedscope_carry_the_same_counts(tmp_path, inputs, symbols):
    d, good = inputs
    want = sequential(good, symbols)
    pb, ss = tmp_path / "f.pb.gz", tmp_path / "f.json"
    for fmt, out in (("pprof", pb), ("speedscope", ss)):
        res = run_cli("fleet", *good, "--format", fmt, "-o", out, "--workers", 2, *symbols)
        assert res.returncode == 0, res.stderr
    prof = read_profile(pb)
    names = {loc.id: prof.string_table[fn.name] for loc in prof.location for fn in prof.function
             if fn.id == loc.line[0].function_id}
    got = Counter()
    for smp in prof.sample:
        comm = [prof.string_table[lab.str] for lab in smp.label if prof.string_table[lab.key] == "thread"][0]
        got[";".join([comm] + [names[i] for i in reversed(smp.location_id)])] += smp.value[0]
    assert got == want
    doc = json.loads(ss.read_text())
    frames = [f["name"] for f in doc["shared"]["frames"]]
    got = Counter()
    for prof in doc["profiles"]:
        for stack, w in zip(prof["samples"], prof["weights"]):
            got[";".join([prof["name"]] + [frames[i] for i in stack])] += w
    assert got == want


def _start(cmd, tmp_path, name):
    log = open(tmp_path / (name + ".log"), "w")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path,
                            start_new_session=True)


@dask
def test_real_scheduler_two_workers_and_one_killed_mid_run(tmp_path, symbols):
    path, _ = capture("c_per_task")
    many = tmp_path / "many"
    many.mkdir()
    for i in range(24):
        os.link(path, many / ("host%02d.data" % i)) if os.stat(path).st_dev == os.stat(many).st_dev \
            else shutil.copy(path, many / ("host%02d.data" % i))
    sched_file = tmp_path / "scheduler.json"
    py = sys.executable
    procs = [_start([py, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                     "--no-dashboard", "--scheduler-file", str(sched_file)], tmp_path, "scheduler")]
    try:
        for _ in range(300):
            if sched_file.exists() and sched_file.stat().st_size:
                break
            time.sleep(0.1)
        address = json.loads(sched_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        for i in range(2):
            procs.append(_start([py, "-m", "distributed.cli.dask_worker", address, "--nworkers", "1",
                                 "--nthreads", "1", "--no-dashboard", "--no-nanny"], tmp_path, "worker%d" % i))
        from distributed import Client
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        out, rep = tmp_path / "fleet.folded", tmp_path / "fleet.json"
        cmd = [py, "-m", "deferstitch", "fleet", str(many), "-o", str(out), "--report", str(rep),
               "--scheduler", address, "-v", *symbols]
        fleet = subprocess.Popen(cmd, stderr=subprocess.PIPE, cwd=ROOT)
        first = fleet.stderr.readline()
        assert b"inputs done" in first, first
        os.killpg(procs[1].pid, signal.SIGKILL)          # a worker dies mid-run
        _rest, err = fleet.communicate(timeout=300)
        assert fleet.returncode == 0, err
        assert b"24/24 inputs done" in err
        assert folded_lines(out.read_text()) == sequential([path], symbols, times=24)
        report = json.loads(rep.read_text())
        assert report["bad_inputs"] == 0 and len(report["inputs"]) == 24
        single = json.loads(run_cli("report", path, "--json").stdout)
        assert report["totals"]["samples"] == 24 * single["samples"]
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


def test_without_dask_one_line(tmp_path):
    (tmp_path / "dask").mkdir()
    (tmp_path / "dask" / "__init__.py").write_text("raise ImportError('no dask here')\n")
    path, _ = capture("a_per_task")
    env = dict(os.environ, PYTHONPATH="%s:%s" % (tmp_path, ROOT))
    res = subprocess.run([sys.executable, "-m", "deferstitch", "fleet", str(path)], capture_output=True,
                         env=env, cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.decode().strip() == "deferstitch: fleet needs Dask: pip install 'deferstitch[fleet]'"


@dask
def test_default_symbol_sources_as_folded_finds_them(tmp_path, inputs):
    """No symbol options: the kernel's symbols are looked for as folded does (by build id, or
    this kernel's), decided on the client; the answer is the same."""
    _d, good = inputs
    out = tmp_path / "f.folded"
    res = run_cli("fleet", *good[:2], "-o", out, "--workers", 1)
    assert res.returncode == 0, res.stderr
    assert folded_lines(out.read_text()) == sequential(good[:2], [])


def test_address_stacks_are_fed_alike_by_the_engine_and_the_python_path(monkeypatch):
    """AddressStacks takes resolved samples; its record/sample/close do nothing (output/sink.py),
    yet it is no pipeline.Null: the engine must feed it events, and the same as the Python path."""
    from deferstitch import fleet
    from deferstitch.perfdata import engine
    from deferstitch.stitcher import DEFAULT_MAX_PENDING
    need_built("the C engine (deferstitch._accel)", engine.available())
    path, _ = capture("b_per_task")
    opts = {"symbols": False, "kallsyms": None, "symfs": False, "weight": "samples",
            "max_pending": DEFAULT_MAX_PENDING}
    got = {}
    for mode in ("0", "require"):
        monkeypatch.setenv("DEFERSTITCH_ACCEL", mode)
        rows, _js, got[mode] = fleet.stitch_input(str(path), opts)
        assert rows[0]["error"] is None, rows
    assert got["0"] == got["require"]
    assert sum(got["0"].values()) == rows[0]["samples"] > 100


def test_fsspec_urls_are_fetched_and_read_like_the_files(tmp_path, monkeypatch):
    """INPUTS may be fsspec URLs: a glob over fsspec's memory:// file system expands to each
    file, each is fetched into a temporary file (removed after) and stitched exactly as the
    local file; a URL that cannot be fetched is that input's own error."""
    fsspec = pytest.importorskip("fsspec", reason="fsspec not installed: pip install 'deferstitch[fleet]'")
    import tempfile
    from deferstitch import fleet
    from deferstitch.stitcher import DEFAULT_MAX_PENDING
    opts = {"symbols": False, "kallsyms": None, "symfs": False, "weight": "samples",
            "max_pending": DEFAULT_MAX_PENDING}
    fs = fsspec.filesystem("memory")
    local = {}
    for scenario in ("a_per_task", "lost_per_task"):
        path, _ = capture(scenario)
        local["%s.data" % scenario] = path
        fs.pipe("/deferstitch-test/%s.data" % scenario, path.read_bytes())
    try:
        urls = fleet.expand(["memory://deferstitch-test/*.data"])
        assert sorted(u.rsplit("/", 1)[1] for u in urls) == sorted(local) and \
            all(u.startswith("memory://") for u in urls)
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
        for url in urls:
            rows, js, stacks = fleet.stitch_input(url, opts)
            assert rows[0]["error"] is None and rows[0]["path"] == url, rows
            want_rows, want_js, want = fleet.stitch_input(str(local[url.rsplit("/", 1)[1]]), opts)
            assert stacks == want and sum(stacks.values()) > 100
            assert js == want_js
        assert list(tmp_path.iterdir()) == []          # each fetched copy is removed
        rows, js, stacks = fleet.stitch_input("memory://deferstitch-test/missing.data", opts)
        assert rows[0]["error"] and js is None and not stacks
    finally:
        fs.rm("/deferstitch-test", recursive=True)


@dask
def test_a_url_input_is_fetched_by_the_worker(tmp_path):
    """The CLI on a URL (fsspec's local:// protocol: a worker process can open it, unlike
    memory://): the worker fetches it, and the folded lines equal `deferstitch folded` on it."""
    pytest.importorskip("fsspec", reason="fsspec not installed: pip install 'deferstitch[fleet]'")
    path, _ = capture("b_per_task")
    shutil.copy(path, tmp_path / "b.data")
    out, rep = tmp_path / "url.folded", tmp_path / "url.json"
    res = run_cli("fleet", "local://%s/*.data" % tmp_path, "-o", out, "--report", rep,
                  "--workers", 1, "--no-symbols")
    assert res.returncode == 0, res.stderr
    assert folded_lines(out.read_text()) == sequential([path], ["--no-symbols"])
    row, = json.loads(rep.read_text())["inputs"]
    assert row["path"] == "file://%s/b.data" % tmp_path and row["error"] is None
