"""The C engine (deferstitch/_accel.c) against the Python path, which defines the rules.

Each case runs the same command twice, DEFERSTITCH_ACCEL=0 (Python) and DEFERSTITCH_ACCEL=require
(the engine, or an error if it was not used), and wants the same exit status, the same stdout
and stderr byte for byte (report tables and JSON, folded lines, perf script text, error lines)
and the same stitched perf.data byte for byte: on every real capture, from a file and from
standard input, on the perf.data files other projects recorded (layouts, records and damage the
engine hands to the Python decoders), on random synthetic streams that walk every cookie rule
(hypothesis), and on damaged files. The engine never starts over: damage is its own error.
"""
import contextlib
import gzip
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import datafiles
from conftest import CAPTURES, SCENARIOS, SHARED, capture, need_built, run_cli
from synth import BASIC, K, Synth, make_attr, oversized
from deferstitch import cli
from deferstitch.abi import consts as C
from deferstitch.errors import DeferstitchError
from deferstitch.output.stitched_file import REPORT_FEATURE
from deferstitch.perfdata import engine
from deferstitch.perfdata.feed import PerfFeed
from deferstitch.perfdata.reader import PerfData

KALLSYMS = CAPTURES / "kallsyms.xz"
EXTERNAL = SHARED / "external"
DATA = Path(__file__).resolve().parent / "data"
SYMFS = CAPTURES / "bin"


@pytest.fixture(autouse=True)
def _engine_built():
    """Every test here needs the engine: skipped only where it cannot be built, failed where it
    could be but is not (conftest.need_built)."""
    need_built("the C engine (deferstitch._accel)", engine.available())


def test_engine_is_built_where_it_can_be():
    """Where a C compiler and Python's headers are, the engine must be there: a build that
    silently dropped it would turn every comparison below into a skip."""
    need_built("the C engine (deferstitch._accel)", engine.available())
    assert engine.available()


def run(mode, argv):
    old = os.environ.get("DEFERSTITCH_ACCEL")
    os.environ["DEFERSTITCH_ACCEL"] = mode
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli.main([str(a) for a in argv])
    finally:
        if old is None:
            del os.environ["DEFERSTITCH_ACCEL"]
        else:
            os.environ["DEFERSTITCH_ACCEL"] = old
    return rc, out.getvalue(), err.getvalue()


def both(argv, out_file=None, engine="require"):
    """(python result, engine result); a result is (rc, stdout, stderr, bytes of out_file).
    ``engine``: the second run's DEFERSTITCH_ACCEL ("1": where the engine takes the input)."""
    res = []
    for mode in ("0", engine):
        rc, out, err = run(mode, argv)
        data = Path(out_file).read_bytes() if out_file and Path(out_file).exists() else None
        if data and out_file.endswith(".gz"):       # pprof: gzip's header holds the time
            data = gzip.decompress(data)
        res.append((rc, out, err, data))
        if out_file and Path(out_file).exists():
            os.unlink(out_file)
    return res


def assert_same(py, fast):
    assert fast[2] == py[2], "stderr differs:\n%s\n---\n%s" % (py[2], fast[2])
    assert fast[0] == py[0]
    assert fast[1] == py[1], "stdout differs"
    assert fast[3] == py[3], "stitched file differs"


def commands(path, tmp):
    out = str(Path(tmp) / "st.data")
    yield ["report", path, "--json"], None
    yield ["report", path], None
    yield ["stitch", path, "-o", out], out
    yield ["stitch", path, "--native", "-o", out, "--max-pending", "50"], out
    yield ["folded", path, "--no-symbols", "--weight", "period"], None
    yield ["script", path, "--no-symbols", "--max-stack", "5"], None
    yield ["diff", path, path, "--no-symbols", "--weight", "period", "-n"], None
    yield ["script", path, "--no-symbols", "-F", "comm,pid,tid,time,event,ip,sym,period", "--ns"], None
    yield ["export", path, "--format", "speedscope", "--no-symbols", "--weight", "period"], None
    pp = str(Path(tmp) / "p.pb.gz")
    yield ["export", path, "--format", "pprof", "--no-symbols", "-o", pp, "--max-pending", "50"], pp
    fg = str(Path(tmp) / "f.svg")
    yield ["flamegraph", path, "--no-symbols", "--weight", "period", "-o", fg], fg
    yield ["report", path, "--json", "--max-pending", "7"], None
    hp = str(Path(tmp) / "r.html")
    yield ["report", path, "--html", hp, "--max-pending", "50"], hp


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_same_as_python_on_real_captures(scenario, tmp_path):
    path, _folder = capture(scenario)
    for argv, out in commands(path, tmp_path):
        py, fast = both(argv, out)
        assert py[0] == 0, py[2]
        assert_same(py, fast)
    if KALLSYMS.exists():
        for cmd in ("folded", "script"):
            py, fast = both([cmd, path, "--kallsyms", KALLSYMS, "--symfs", SYMFS])
            assert py[1].count("\n") > 10
            assert_same(py, fast)


def _external():
    return datafiles.listing(EXTERNAL)


@pytest.mark.parametrize("path", _external(), ids=lambda p: str(p.relative_to(EXTERNAL)))
def test_same_as_python_on_other_projects_files(path, tmp_path):
    """perf.data files other projects recorded (tests/data/real/external): dwarf and branch stacks
    (layouts the engine hands to the Python decoders), AUXTRACE and tracing data (records it
    passes as they are), pipe mode, zstd, damage, files we refuse."""
    out = str(tmp_path / "st.data")
    try:            # what the engine declines up front (group reads, LBR, ...) runs on Python
        with PerfData.open(str(path)) as perf:
            why = engine.unavailable(perf)
    except DeferstitchError:
        why = "not read"
    fg, hp = str(tmp_path / "f.svg"), str(tmp_path / "r.html")
    for argv, o in ((["report", path, "--json"], None), (["stitch", path, "-q", "-o", out], out),
                    (["report", path, "--html", hp], hp),
                    (["folded", path, "--no-symbols"], None), (["script", path, "--no-symbols"], None),
                    (["flamegraph", path, "--no-symbols", "-o", fg], fg)):
        py, fast = both(argv, o, engine="1" if why else "require")
        assert_same(py, fast)


def stdin_both(argv, raw, engine="require"):
    """(python, engine) CompletedProcess of the CLI reading ``raw`` from a real pipe."""
    return [run_cli(*argv, input=raw, env=dict(os.environ, DEFERSTITCH_ACCEL=mode)) for mode in ("0", engine)]


@pytest.mark.parametrize("scenario", ["pipe", "compressed", "a_per_task"])
def test_standard_input_on_the_engine(scenario):
    """Standard input runs on the engine, in one pass (file-mode perf.data too, whose features
    come after the data): the same bytes as the Python path."""
    raw = capture(scenario)[0].read_bytes()
    for argv in (["report", "-", "--json"], ["stitch", "-", "-q"], ["folded", "-", "--no-symbols"],
                 ["script", "-", "--no-symbols", "--max-stack", "4"],
                 ["flamegraph", "-", "--no-symbols", "-o", "-"]):
        py, fast = stdin_both(argv, raw)
        assert py.returncode == 0, py.stderr
        assert (fast.returncode, fast.stdout, fast.stderr) == (py.returncode, py.stdout, py.stderr), argv


@pytest.mark.parametrize("name", ["perfparser/probe.data.stream", "linux-perf-data/sleep.compressed.pipe.data",
                                  "perf_data_converter/perf.data.piped.target-3.8",
                                  "perf_data_converter/perf.data.piped.header_feautres_group_desc-6.8"])
def test_script_from_a_pipe_without_callchains(name):
    """``perf record -o - | deferstitch script -``: pipe-format standard input whose attrs come
    late and whose samples have no callchain (perf script prints their own ip on the line), a
    tracepoint named by tracing data that comes as a record: on the engine, the Python path's bytes."""
    path = EXTERNAL / name
    py, fast = stdin_both(["script", "-", "--no-symbols"], path.read_bytes())
    assert py.returncode == 0, py.stderr
    assert (fast.returncode, fast.stdout, fast.stderr) == (py.returncode, py.stdout, py.stderr)
    first = py.stdout.split(b"\n", 1)[0]
    assert b": " in first and not first.endswith(b": ")       # the sample's ip on its own line


@pytest.mark.parametrize("scenario, nth", [("a_per_task", 3), ("a_per_task", 500),
                                           ("a_per_task", 5000), ("c_per_task", 30000)])
def test_damage_is_the_python_paths_error(scenario, nth, tmp_path):
    """A record size of 4 inside the data section: the engine stops there with the Python path's
    error (same text, same offset) and has delivered what the Python path delivers before it,
    without starting over. (c_per_task: the damage lies past the first 1 MiB read.)"""
    path, _folder = capture(scenario)
    raw = bytearray(path.read_bytes())
    with PerfData.open(str(path)) as perf:
        at = next(r.offset for i, r in enumerate(perf.records()) if i == nth)
    struct.pack_into("<H", raw, at + 6, 4)
    bad = tmp_path / "bad.data"
    bad.write_bytes(bytes(raw))
    out = str(tmp_path / "st.data")
    py, fast = both(["stitch", bad, "-o", out], out)
    assert_same(py, fast)
    assert py[0] == 2 and "offset %#x" % at in py[2]
    py, fast = both(["script", bad, "--no-symbols"])
    assert_same(py, fast)
    assert py[0] == 2 and (py[1].count("\n\n") > 100) == (nth > 100)   # samples before the damage are out
    py, fast = stdin_both(["folded", "-", "--no-symbols"], bytes(raw))
    assert (fast.returncode, fast.stdout, fast.stderr) == (py.returncode, py.stdout, py.stderr)
    assert py.returncode == 2 and b"offset %#x" % at in py.stderr


def test_lost_counts_saturate_the_same_on_both_paths(tmp_path):
    """Two LOST records whose u64 counts add up past 2^64: both paths saturate at 2^64-1 (the
    engine used to wrap, the Python path to grow past u64), in the report and in the report a
    stitched file carries."""
    path = DATA / "diff-engine-vs-python.data"
    py, fast = both(["report", path, "--json"])
    assert_same(py, fast)
    assert '"lost_events": %d,' % ((1 << 64) - 1) in py[1]
    out = str(tmp_path / "st.data")
    py, fast = both(["stitch", path, "-q", "-o", out], out)
    assert_same(py, fast)


def test_no_undefined_behaviour_on_an_empty_container(tmp_path):
    """A COMPRESSED record that decompresses to 0 bytes: the engine built with UBSan (aborting on
    the first finding) must run the file without a finding (it applied a zero offset to a null
    pointer)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no C compiler: apt-get install gcc")
    root = Path(engine.__file__).resolve().parent.parent
    shutil.copytree(root, tmp_path / "deferstitch", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    so = tmp_path / "deferstitch" / ("_accel" + sysconfig.get_config_var("EXT_SUFFIX"))
    ubsan = [gcc, "-shared", "-fPIC", "-O1", "-fsanitize=undefined", "-fno-sanitize-recover=all"]
    (tmp_path / "probe.c").write_text("int probe(int x) { return x + 1; }\n")
    probe = subprocess.run(ubsan + [str(tmp_path / "probe.c"), "-o", str(tmp_path / "probe.so")],
                           capture_output=True, text=True)
    if probe.returncode != 0:       # this gcc cannot build with UBSan at all (not our source)
        pytest.skip("no UBSan build (apt-get install gcc): %s" % probe.stderr[-300:])
    cc = subprocess.run(ubsan + ["-I" + sysconfig.get_paths()["include"], str(root / "_accel.c"), "-o", str(so)],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr[-3000:]
    p = subprocess.run([sys.executable, "-m", "deferstitch", "report", str(DATA / "accel-ub-null-zin.data"),
                        "--json"], cwd=tmp_path, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(tmp_path), DEFERSTITCH_ACCEL="1"))
    assert "runtime error" not in p.stderr, p.stderr
    assert p.returncode == 2 and "offset 0x114" in p.stderr, p.stderr


def test_a_stitched_sample_past_64_kib_keeps_the_user_frames_that_fit(tmp_path):
    """A kernel part near the u16 record limit plus a long deferred user stack: both paths write
    the sample with its innermost user frames that fit (as perf's max_stack cuts a chain), the
    same bytes, and count the cut; a user stack that fits exactly is whole. The big sample waits
    behind one that never resolves, so it is written at the end of the stream."""
    path, chains_in = oversized(tmp_path / "big.data")
    kernel, user = chains_in[10]
    exact = chains_in[11][0]
    out = str(tmp_path / "st.data")
    py, fast = both(["stitch", path, "-o", out], out)
    assert_same(py, fast)
    assert py[0] == 0, py[2]
    kept = (0xFFFF - (40 + 8 + 8 * len(kernel))) // 8 - 1          # after PERF_CONTEXT_USER
    assert "1 stitched samples cut to fit perf's 64 KiB record size (%d user frames left out)" \
        % (len(user) - kept) in py[2], py[2]
    stitched = tmp_path / "again.data"
    stitched.write_bytes(py[3])
    with PerfData.open(str(stitched)) as perf:
        chains = {}
        for rec in perf.records():
            if rec.type == C.PERF_RECORD_SAMPLE:
                sm = perf.evlist.for_sample(rec.data).layout.parse(rec.data)
                assert len(rec.data) <= 0xFFFF
                chains[sm.tid] = list(sm.callchain)
        carried = json.loads(bytes(perf.features[REPORT_FEATURE]).decode())
    assert chains[10] == kernel + [C.PERF_CONTEXT_USER] + user[:kept]
    assert chains[11] == exact + [C.PERF_CONTEXT_USER] + user[:50]
    assert chains[9] == K
    assert carried["stitched"] == 2 and carried["unmatched"] == {"stream-ended": 1}
    assert carried["perf"]["truncated_user_stacks"] == {"samples": 1, "frames": len(user) - kept}


# -- random synthetic streams through every cookie rule ----------------------------------------
TIDS = [10, 11, 12, 13]
event = st.one_of(
    st.tuples(st.just("sample"), st.sampled_from(TIDS), st.sampled_from([None, 1, 2, 3])),
    st.tuples(st.just("deferred"), st.sampled_from(TIDS), st.sampled_from([1, 2, 3])),
    st.tuples(st.just("exit"), st.sampled_from(TIDS), st.just(0)),
    st.tuples(st.just("fork"), st.sampled_from(TIDS), st.sampled_from(TIDS)),
    st.tuples(st.just("comm"), st.sampled_from(TIDS), st.sampled_from(["a", "b c", ""])),
    st.tuples(st.just("lost"), st.just(0), st.integers(1, 3)),
    st.tuples(st.just("round"), st.just(0), st.just(0)),
    st.tuples(st.just("gap"), st.just(0), st.sampled_from([10, 2_000_000_000])),
)


def synth_file(events, path, cpu_attr):
    attrs = [make_attr(sample_type=BASIC | C.PERF_SAMPLE_CPU | C.PERF_SAMPLE_IDENTIFIER),
             make_attr(sample_type=BASIC | C.PERF_SAMPLE_CPU | C.PERF_SAMPLE_IDENTIFIER, config=1)] \
        if cpu_attr else None
    f = Synth(attrs=attrs)
    t = 1000
    for i, (kind, a, b) in enumerate(events):
        t += 100
        if kind == "sample":
            f.sample(a, t, kernel=K + [0xffffffff81000000 + i], cookie=b, user=None if b else [0x401000 + i],
                     attr_index=i % 2 if cpu_attr else 0, cpu=i % 3)
        elif kind == "deferred":
            f.deferred(a, t, b, [0x400000 + i, 0x400100])
        elif kind == "exit":
            f.exit(a, t)
        elif kind == "fork":
            f.raw(C.PERF_RECORD_FORK, struct.pack("<iiiiQ", a, b, a, b, t) + f.trailer(a, t))
        elif kind == "comm":
            f.raw(C.PERF_RECORD_COMM, struct.pack("<ii", a, a) + b.encode() + b"\0" * (8 - len(b) % 8)
                  + f.trailer(a, t))
        elif kind == "lost":
            f.lost(t, b)
        elif kind == "round":
            f.round()
        else:
            t += b
    return f.save(path)


@settings(max_examples=int(os.environ.get("DEFERSTITCH_ACCEL_EXAMPLES", "150")), deadline=None,
          derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(events=st.lists(event, min_size=1, max_size=60), cpu_attr=st.booleans(),
       max_pending=st.sampled_from([0, 2, 5, 1000]))
@example(events=[("sample", 10, 1)] * 4 + [("sample", 11, 2)] * 3 + [("deferred", 11, 2)],
         cpu_attr=False, max_pending=2)                                  # eviction
@example(events=[("sample", 10, 1), ("exit", 10, 0), ("gap", 0, 2_000_000_000), ("sample", 11, 1),
                 ("fork", 12, 11), ("exit", 12, 0), ("fork", 12, 11), ("sample", 12, 3)],
         cpu_attr=True, max_pending=1000)                                # exit grace, tid reuse
@example(events=[("sample", 10, 1), ("lost", 0, 2), ("deferred", 10, 2), ("deferred", 10, 2),
                 ("sample", 10, 2), ("deferred", 13, 1)], cpu_attr=False, max_pending=5)
def test_same_as_python_on_random_streams(events, cpu_attr, max_pending):
    with tempfile.TemporaryDirectory() as tmp:
        path = synth_file(events, Path(tmp) / "s.data", cpu_attr)
        out = str(Path(tmp) / "st.data")
        for argv, o in (
                (["report", path, "--json", "--max-pending", max_pending], None),
                (["stitch", path, "-q", "-o", out, "--max-pending", max_pending], out),
                (["folded", path, "--no-symbols", "--max-pending", max_pending], None),
                (["script", path, "--no-symbols", "--max-pending", max_pending], None),
                (["export", path, "--format", "pprof", "--no-symbols", "-o", out + ".gz",
                  "--max-pending", max_pending], out + ".gz"),
                (["flamegraph", path, "--no-symbols", "-o", out + ".svg", "--max-pending", max_pending],
                 out + ".svg")):
            py, fast = both(argv, o)
            assert py[0] == 0, py[2]
            assert_same(py, fast)
        assert library_report(path, max_pending, window=4, fast=False) == \
            library_report(path, max_pending, window=4, fast=True)


class _Null:
    def record(self, rec):
        pass

    def sample(self, s):
        pass


def library_report(path, max_pending, window, fast):
    """The report of one pass with a tiny hold-back window (which the CLI does not expose)."""
    with PerfData.open(str(path)) as perf:
        if fast:
            run_ = engine.EngineRun(perf, engine.MODE_NONE, max_pending, window=window)
            for _chunk in run_.chunks():
                pass
            return run_.report().to_json()
        return PerfFeed(perf, _Null(), max_pending=max_pending, window=window).run().to_json()


def test_engines_are_freed(tmp_path):
    """An engine and its callbacks form a cycle (EngineRun -> Engine -> bound methods): it must
    take part in garbage collection, or every in-process run (a library user, the fuzz test)
    keeps its buffers for good."""
    import gc
    import resource
    path, _folder = capture("c_per_task")

    def once():
        with PerfData.open(str(path)) as perf:
            r = engine.EngineRun(perf, engine.MODE_FILE, 1000)
            for _chunk in r.chunks():
                pass
            r.report()
    for _ in range(3):
        once()
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(40):
        once()
    gc.collect()
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown < 30 * 1024, "peak RSS grew by %d KiB over 40 runs" % grown


def test_a_no_cookie_sample_after_cookie_ones_is_the_same_damage_on_both_paths():
    """A sample ending in the deferred marker without its cookie in a file whose deferred chains
    carry cookies, found while the sorter's queue is delivered after other damage: the engine
    raised its Limit ("the pre-cookie layout ... run with DEFERSTITCH_ACCEL=0") over the damage,
    a traceback; now both paths give the Python path's line and report."""
    path = DATA / "engine-layout-mix.data"
    py, fast = both(["report", path, "--json"])
    assert_same(py, fast)
    assert py[0] == 2 and "no-cookie layout, but this file's are in the cookie layout" in py[2], py


def test_a_sample_without_its_tid_beside_others_in_the_json_report():
    """Samples with a tid and one without (its sample_type lost TID in a damaged attr): report
    --json sorted the threads with None among ints, a TypeError traceback on both paths; now the
    tid-less thread comes last, as "None", and a saved report reads back."""
    from deferstitch.report import StitchReport
    path = DATA / "report-tid-none.data"
    py, fast = both(["report", path, "--json"])
    assert_same(py, fast)
    assert py[0] == 2 and "Traceback" not in py[2], py[2]
    d = json.loads(py[1])
    assert list(d["by_thread"])[-1] == "None" and len(d["by_thread"]) > 1, d["by_thread"]
    assert StitchReport.from_json(d).to_json()["by_thread"] == d["by_thread"]
