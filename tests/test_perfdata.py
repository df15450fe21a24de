"""The reader and writer on real captures and on synthetic edge cases."""
import io
import json
import struct

import pytest

from conftest import SCENARIOS, capture, run_cli
from oracle import parse_report_stats
from synth import Synth, make_attr
from deferstitch.abi import consts as C
from deferstitch.errors import FormatError, UnsupportedError
from deferstitch.perfdata.reader import PerfData
from deferstitch.perfdata.writer import PerfWriter


def counts(path):
    with PerfData.open(str(path)) as p:
        out = {}
        for r in p.records():
            out[C.record_name(r.type)] = out.get(C.record_name(r.type), 0) + 1
        return out


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_record_counts_equal_perf_report_stats(scenario):
    path, folder = capture(scenario)
    assert counts(path) == parse_report_stats(folder / "report-stats.txt")


@pytest.mark.parametrize("scenario", ["a_per_task", "syswide", "pipe", "compressed"])
def test_info_json_counts(scenario):
    path, folder = capture(scenario)
    r = run_cli("info", path, "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["records"] == parse_report_stats(folder / "report-stats.txt")
    assert all(a["defer_callchain"] for a in info["attrs"] if a["name"] == "cpu-clock")
    assert info["mode"] == ("pipe" if scenario == "pipe" else "file")
    if scenario != "pipe":
        assert info["features"]["OSRELEASE"] == "7.2.13+deb14-amd64"


def rewrite(src, dst, compat=False):
    with PerfData.open(str(src)) as p, open(dst, "w+b") as f:
        w = PerfWriter(f, p.endian, compat=compat)
        for r in p.records():
            if not r.inner and r.type in (C.PERF_RECORD_COMPRESSED, C.PERF_RECORD_COMPRESSED2):
                continue
            w.write(r)
        w.close(p.evlist.entries, p.features)


def record_bytes(path):
    with PerfData.open(str(path)) as p:
        return [(r.type, r.data) for r in p.records()
                if r.type not in (C.PERF_RECORD_COMPRESSED, C.PERF_RECORD_COMPRESSED2,
                                  C.PERF_RECORD_HEADER_ATTR, C.PERF_RECORD_HEADER_FEATURE)]


@pytest.mark.parametrize("scenario", ["a_per_task", "two_events_cpu_task", "pipe", "compressed"])
def test_round_trip_is_identical(scenario, tmp_path):
    path, _ = capture(scenario)
    out = tmp_path / "rt.data"
    rewrite(path, out)
    assert record_bytes(out) == record_bytes(path)
    with PerfData.open(str(path)) as a, PerfData.open(str(out)) as b:
        list(a.records())
        list(b.records())
        assert [e.attr.raw for e in a.evlist.entries] == [e.attr.raw for e in b.evlist.entries]
        assert [e.ids for e in a.evlist.entries] == [e.ids for e in b.evlist.entries]
        assert [e.name for e in a.evlist.entries] == [e.name for e in b.evlist.entries]
        for bit, raw in a.features.items():
            if bit != C.HEADER_COMPRESSED:
                assert b.features[bit] == raw
    again = tmp_path / "rt2.data"
    rewrite(out, again)
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize("size", [64, 128, 144, 200])
def test_attr_sizes(tmp_path, size):
    f = Synth(attrs=[make_attr(size=size)])
    f.sample(7, 100, cookie=1)
    path = f.save(tmp_path / "a.data")
    with PerfData.open(str(path)) as p:
        assert len(p.evlist.entries[0].attr.raw) == size
        assert p.header.attr_size == size + 16
        assert p.evlist.entries[0].attr.defer_callchain
        assert [r.type for r in p.records()] == [C.PERF_RECORD_SAMPLE]
    out = tmp_path / "c.data"
    rewrite(path, out, compat=True)
    with PerfData.open(str(out)) as p:
        assert p.header.attr_size == 128 + 16
        assert not p.evlist.entries[0].attr.defer_callchain


def test_compat_refuses_a_non_zero_attr_tail(tmp_path):
    f = Synth(attrs=[make_attr(size=144, tail=b"\x01")])
    path = f.save(tmp_path / "t.data")
    with pytest.raises(UnsupportedError):
        rewrite(path, tmp_path / "c.data", compat=True)
    r = run_cli("stitch", path, "-o", tmp_path / "c2.data")
    assert r.returncode == 2 and r.stderr.count(b"\n") == 1 and b"non-zero" in r.stderr
    assert not (tmp_path / "c2.data").exists()         # no half-written file left behind


def test_unknown_record_type_and_feature_pass_through(tmp_path):
    f = Synth()
    f.raw(99, b"\x11" * 16)
    f.raw(23, b"\x22" * 8)                 # a kernel type from the future
    f.sample(7, 100, cookie=1)
    path = f.save(tmp_path / "u.data", features={200: b"future feature"})
    with PerfData.open(str(path)) as p:
        assert [r.type for r in p.records()] == [99, 23, C.PERF_RECORD_SAMPLE]
        assert p.features[200] == b"future feature"
    out = tmp_path / "s.data"
    assert run_cli("stitch", path, "-o", out, "--native").returncode == 0
    with PerfData.open(str(out)) as p:
        assert [r.type for r in p.records()][:2] == [99, 23]
        assert p.features[200] == b"future feature"


def _synth_bytes(tmp_path):
    f = Synth()
    for t in range(10):
        f.sample(7, 100 + t, cookie=1)
    f.deferred(7, 200, 1, [0x401000])
    return f.save(tmp_path / "good.data").read_bytes()


def test_truncated_real_capture_keeps_what_came_before(tmp_path):
    path, _ = capture("a_per_task")
    good = path.read_bytes()
    with PerfData.open(str(path)) as p:
        offsets = [r.offset for r in p.records()]
    cut = offsets[len(offsets) // 2] + 20          # inside a record half way through
    bad = tmp_path / "trunc.data"
    bad.write_bytes(good[:cut])
    with PerfData.open(str(bad)) as p:
        got = []
        with pytest.raises(FormatError) as ei:
            for r in p.records():
                got.append(r)
    assert len(got) == len(offsets) // 2 and ei.value.offset == cut - 20
    out = tmp_path / "partial.data"
    r = run_cli("stitch", bad, "-o", out)
    assert r.returncode == 2 and b"offset %#x" % (cut - 20) in r.stderr
    with PerfData.open(str(out)) as p:                # what was good is still written
        assert sum(1 for r in p.records() if r.type == C.PERF_RECORD_SAMPLE) > 1000
    r = run_cli("report", bad)
    assert r.returncode == 2 and r.stderr.count(b"\n") == 1 and b"offset 0x" in r.stderr


def test_record_size_zero(tmp_path):
    good = bytearray(_synth_bytes(tmp_path))
    with PerfData.open(str(tmp_path / "good.data")) as p:
        first = p.data_start
    struct.pack_into("<H", good, first + 6, 0)
    bad = tmp_path / "zero.data"
    bad.write_bytes(bytes(good))
    r = run_cli("stitch", bad, "-o", tmp_path / "o.data")
    assert r.returncode == 2
    assert ("offset %#x" % first).encode() in r.stderr and b"size 0" in r.stderr


@pytest.mark.parametrize("content", [b"", b"hello world, not perf", b"PERFILE2" + b"\0" * 10,
                                     b"PERFILE2" + struct.pack("<Q", 104) + b"\0" * 20])
def test_not_a_perf_data(tmp_path, content):
    bad = tmp_path / "bad.data"
    bad.write_bytes(content)
    for cmd in ("info", "report", "stitch", "script", "folded"):
        args = [cmd, bad] + (["-o", tmp_path / "o"] if cmd == "stitch" else [])
        r = run_cli(*args)
        assert r.returncode == 2, (cmd, r.stderr)
        assert r.stderr.count(b"\n") == 1 and b"Traceback" not in r.stderr


def test_missing_file():
    r = run_cli("report", "/nonexistent/perf.data")
    assert r.returncode == 2 and b"/nonexistent/perf.data" in r.stderr


def test_pipe_mode_from_stdin_equals_file(tmp_path):
    path, _ = capture("pipe")
    with open(path, "rb") as f:
        r1 = run_cli("report", "-", "--json", stdin=f)
    r2 = run_cli("report", path, "--json")
    assert r1.returncode == r2.returncode == 0
    assert json.loads(r1.stdout)["stitched"] == json.loads(r2.stdout)["stitched"] > 0


def test_file_mode_through_a_pipe(tmp_path):
    path, _ = capture("a_per_task")
    with open(path, "rb") as f:
        r1 = run_cli("report", "-", "--json", stdin=f)
    r2 = run_cli("report", path, "--json")
    assert r1.returncode == 0, r1.stderr
    a, b = json.loads(r1.stdout), json.loads(r2.stdout)
    assert a["unmatched"] == b["unmatched"] and a["stitched"] == b["stitched"]


def test_stitch_of_a_file_mode_pipe_equals_the_file_run(tmp_path):
    path, _ = capture("two_events_cpu_task")
    with open(path, "rb") as f:
        piped = run_cli("stitch", "-", "-q", stdin=f)
    assert piped.returncode == 0, piped.stderr
    assert run_cli("stitch", path, "-q", "-o", tmp_path / "f.data").returncode == 0
    assert piped.stdout == (tmp_path / "f.data").read_bytes()      # features too


@pytest.mark.parametrize("compat", [False, True])
def test_keep_table_is_keep_for_every_record_type(compat):
    """The C engine writes what keep_table() says: it must be keep(), type for type."""
    w = PerfWriter(io.BytesIO(), "<", compat=compat)
    table = w.keep_table()
    assert len(table) == 65536
    assert [bool(b) for b in table] == [w.keep(t) for t in range(65536)]


def _layout(path):
    with PerfData.open(str(path)) as p:
        return p.header.attrs.offset, p.header.data.offset


@pytest.mark.parametrize("scenario", ["a_per_task", "compressed"])
def test_a_stitched_file_reads_back_from_a_pipe(scenario, tmp_path):
    """Our stitched file puts attrs and ids before the data, as perf's own files do, so that
    `cat stitched.data | deferstitch CMD -` reads it (a pipe gives only what precedes the data):
    the same report and folded stacks as from the file."""
    path, _ = capture(scenario)
    out = tmp_path / "st.data"
    assert run_cli("stitch", path, "-q", "-o", out).returncode == 0
    attrs_at, data_at = _layout(out)
    assert attrs_at < data_at
    for argv in (["report", "--json"], ["folded", "--no-symbols"]):
        with open(out, "rb") as f:
            piped = run_cli(argv[0], "-", *argv[1:], "-q", stdin=f)
        direct = run_cli(argv[0], out, *argv[1:], "-q")
        assert piped.returncode == 0, piped.stderr
        assert piped.stdout == direct.stdout and piped.stdout.count(b"\n") > 10, argv


def test_a_pipe_inputs_attrs_follow_the_data_as_perf_inject_puts_them(tmp_path):
    """A pipe-format input brings its attrs as records: they are written after the data, as
    perf inject does for a pipe input (write_attrs_after_data); the file reads as a file."""
    path, _ = capture("pipe")
    out = tmp_path / "st.data"
    assert run_cli("stitch", path, "-q", "-o", out).returncode == 0
    attrs_at, data_at = _layout(out)
    assert attrs_at > data_at
    r = run_cli("report", out, "--json", "-q")
    assert r.returncode == 0 and json.loads(r.stdout)["samples"] > 0, r.stderr


def test_attrs_changed_after_the_data_began_are_written_after_it(tmp_path):
    """Attrs given up front that differ at close (more ids): the header points at the ones
    written after the data; the block before the data is left unused."""
    s = Synth()
    s.sample(10, 100, cookie=1)
    s.deferred(10, 200, 1, [0x401000])
    out = tmp_path / "w.data"
    with open(out, "w+b") as f:
        w = PerfWriter(f, "<", entries=s.evlist.entries)
        for r in s.records:
            w.write(r)
        s.evlist.entries[0].ids.append(999)
        w.close(s.evlist.entries, {})
    attrs_at, data_at = _layout(out)
    assert attrs_at > data_at
    with PerfData.open(str(out)) as p:
        assert p.evlist.entries[0].ids == [100, 999]
        assert [r.type for r in p.records()] == [C.PERF_RECORD_SAMPLE, C.PERF_RECORD_CALLCHAIN_DEFERRED]
