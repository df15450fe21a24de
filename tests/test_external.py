"""Anyone's perf.data: perf's own answers on the files other projects recorded (tests/data/real/external;
the harness is tests/external.py), and the four layouts that once differed, on small copies kept
in tests/data/external with the outputs of the real perf 6.1 and 7.2 beside them.
"""
import json
import os
import re
import shutil
import struct
import subprocess

import pytest

import external as X
from conftest import DATA, need_sid_perf, run_cli
from synth import Synth, make_attr

from deferstitch.abi import consts as C
from deferstitch.perfdata import tracing_data
from deferstitch.perfdata.reader import PerfData

KEPT = DATA / "external"

# Known differences: strict, so that a fix shows here.
KNOWN = {
    "perf_data_converter/perf.data.intel_pt-4.14":
        "perf script decodes the Intel PT trace (AUXTRACE) and shows the samples it synthesizes "
        "from it; deferstitch does not decode AUX data (it warns, counts perf.auxtrace, and shows "
        "the 15 recorded samples only)",
}


def _files():
    return X.files()


def _one_line_exit_2(rc, err, path):
    """Bad input: exit 2 and one line naming the file and a byte offset."""
    lines = err.strip().splitlines()
    return rc == 2 and len(lines) == 1 and str(path) in lines[0] and "offset" in lines[0]


@pytest.mark.parametrize("rel", _files())
def test_script_gives_perfs_ips(rel, request):
    """Every sample of ``perf script -F comm,tid,time,ip`` (perf 7.2, else 6.1, else the kept
    output) has the same ips in ``deferstitch script --no-symbols``, and we print no other."""
    if rel in KNOWN:
        request.applymarker(pytest.mark.xfail(reason=KNOWN[rel], strict=True))
    tools = X.perf_tools()
    if not tools and X.kept_answer(rel) is None:
        pytest.skip("no perf here and no kept output: apt-get install linux-perf, or the "
                    "perf 7.x chroot (tools/sid-perf, as root): make test as root installs both")
    v = X.check(rel, tools)
    if v is None:                       # no perf reads it: we read it cleanly or say where not
        rc, out, err = X.ours(rel)
        assert rc == 0 or _one_line_exit_2(rc, err, X.EXTERNAL / rel), err
        return
    print("%s: %d/%d samples match %s" % (rel, v["matching"], v["total"], v["perf"]))
    assert v["matching"] == v["total"], v["first_diff"]
    # damage (sleep.compressed2.pipe.data ends in perf record's own messages): perf 7.2 warns,
    # we say where, exit 2 and keep every sample before it
    assert v["ours_rc"] == 0 or _one_line_exit_2(v["ours_rc"], "\n".join(v["ours_err"]),
                                                 X.EXTERNAL / rel), v["ours_err"]


@pytest.mark.parametrize("rel", _files())
def test_stitched_file_is_read_by_perf(rel, tmp_path):
    """``deferstitch stitch`` of each file gives perf 6.1 and 7.2 (each that reads the original)
    the original's SAMPLE count; a file no perf reads gives a clean read or one line, exit 2."""
    tools = X.perf_tools()
    if not tools:
        pytest.skip("no perf here: apt-get install linux-perf, or the perf 7.x rig")
    r = X.check_stitch(rel, tmp_path, tools)
    assert r["ours_rc"] == 0 or _one_line_exit_2(r["ours_rc"], r["ours_err"], tmp_path / "orig.data"), \
        r["ours_err"]
    perfs = {k: v for k, v in r.items() if k.startswith("perf")}
    counts = {v[0] for v in perfs.values() if v[0] is not None}
    assert len(counts) <= 1, perfs
    for label, (n, _orc, sn, src) in perfs.items():
        print("%s: %s %s -> %s (exit %s)" % (rel, label, n, sn, src))
        if n is not None:
            assert (src, sn) == (0, n), label
        elif src == 0 and counts:        # a perf that refused the original: if it reads ours,
            assert sn == min(counts), label   # it finds every sample


NAMES_KNOWN = {
    "perf_data_converter/perf.data.intel_pt-4.14":
        "perf names the samples it synthesizes from the Intel PT trace",
}


@pytest.mark.parametrize("rel", _files())
def test_event_names_are_perfs(rel, request):
    """The name perf 7.2 prints for each event with samples is the name we give it: EVENT_DESC
    by position, else the generic name with perf 6.12+'s modifiers (":uppp", ":H")."""
    if rel in NAMES_KNOWN:
        request.applymarker(pytest.mark.xfail(reason=NAMES_KNOWN[rel], strict=True))
    tool = need_sid_perf()
    theirs = X.perf_event_names([tool], rel)
    if theirs is None:
        pytest.skip("perf 7.2 does not read %s" % rel)
    assert theirs <= (X.our_event_names(rel) or set())


# -- item 1: perf script's header line --------------------------------------------------------
HEAD_TO_IP = r"^(.*?\d+\.\d+:\s+\d+\s+\S+: ) ([ 0-9a-f]{16})(?: |$)"


def test_script_header_line_is_perfs():
    """Several events, no callchain (quipper's singleprocess-3.4): comm right-aligned in 16
    columns, event names right-aligned to the longest, the sample's ip on the header line and
    no blank line, exactly as perf 7.2's default ``perf script`` prints them (the text after
    the ip is the symbol, which needs the recording machine's kallsyms)."""
    name = "perf_data_converter__perf.data.singleprocess-3.4"
    theirs = (KEPT / (name + ".script.perf72.txt")).read_text().splitlines()
    r = run_cli("script", "--no-symbols", "-q", KEPT / name)
    assert r.returncode == 0, r.stderr
    ours = r.stdout.decode().splitlines()
    assert len(ours) == len(theirs) == 77
    head = re.compile(HEAD_TO_IP)
    for a, b in zip(ours, theirs):
        ma, mb = head.match(a), head.match(b)
        assert ma and mb and ma.groups() == mb.groups(), (a, b)


# -- item 4: EVENT_DESC names by position ------------------------------------------------------
def test_event_desc_without_ids_names_by_position():
    """perfparser's probe.data.file: its EVENT_DESC entry has no ids; perf (6.1 and 7.2) names
    the event by position, and so do we."""
    name = "perfparser__probe.data.file"
    with PerfData.open(str(KEPT / name)) as p:
        assert p.feature(C.HEADER_EVENT_DESC)[0]["ids"] == []
    want = set()
    for label in ("perf61", "perf72"):
        text = (KEPT / ("%s.event.%s.txt" % (name, label))).read_text()
        want.add(text.split(": ")[1])              # "comm tid time: EVENT: "
    assert want == {"probe_untitled1:main"}
    r = run_cli("script", "--no-symbols", "-q", KEPT / name)
    assert r.returncode == 0, r.stderr
    assert " probe_untitled1:main: " in r.stdout.decode()


def test_tracepoint_named_from_tracing_data():
    """perfparser's probe.data.stream (pipe, no EVENT_DESC): perf names the uprobe from the
    tracing data's format of its ID, and so do we."""
    name = "perfparser__probe.data.stream"
    want = {(KEPT / ("%s.event.%s.txt" % (name, label))).read_text().split(": ")[1]
            for label in ("perf61", "perf72")}
    assert want == {"probe_untitled1:main"}
    r = run_cli("script", "--no-symbols", "-q", KEPT / name)
    assert r.returncode == 0, r.stderr
    assert " probe_untitled1:main: " in r.stdout.decode()


def test_tracing_data_names_agree_with_event_desc():
    """Where a file of tests/data/real/external has both, the tracing data names each tracepoint as
    its EVENT_DESC (perf's own name) does."""
    checked = []
    for rel in X.files():
        with PerfData.open(str(X.EXTERNAL / rel)) as p:
            raw, desc = p.features.get(C.HEADER_TRACING_DATA), p.feature(C.HEADER_EVENT_DESC)
            if not raw or not desc:
                continue
            names = tracing_data.event_names(raw)
            assert len(desc) == len(p.evlist.entries), rel     # zip below: one entry per attr
            tps = [(e.attr.config, d["name"]) for e, d in zip(p.evlist.entries, desc)
                   if e.attr.type == C.PERF_TYPE_TRACEPOINT]
            assert all(names.get(config) == n for config, n in tps), (rel, tps, names)
            checked += tps
    assert checked, "no file with tracing data and EVENT_DESC in tests/data/real/external"


def test_event_desc_names_follow_attr_order(tmp_path):
    """Two attrs, EVENT_DESC naming them in attr order with ids that match neither."""
    f = Synth(attrs=[make_attr(config=0), make_attr(config=1)])
    f.sample(7, 100, attr_index=1)
    desc = struct.pack("<II", 2, 144) + b"".join(
        a.attr.pack(144, False) + struct.pack("<I", 0) + _string(n)
        for a, n in zip(f.evlist.entries, ("first:u", "second:k")))
    path = f.save(tmp_path / "d.data", features={C.HEADER_EVENT_DESC: desc})
    with PerfData.open(str(path)) as p:
        assert [e.name for e in p.evlist.entries] == ["first:u", "second:k"]


def _string(s):
    raw = s.encode() + b"\0"
    n = (len(raw) + 63) // 64 * 64
    return struct.pack("<I", n) + raw.ljust(n, b"\0")


# -- item 5: the v1 header ---------------------------------------------------------------------
def _stats(text):
    """{record name: count} of ``perf report --stats``' aggregated lines."""
    out = {}
    for line in text.split("Aggregated stats:")[1].splitlines():
        tok = line.split()
        if len(tok) >= 3 and tok[1] == "events:":
            out[tok[0]] = int(tok[2])
    return out


def test_v1_header_reads_as_perf_reads_it(tmp_path):
    """hotspot's perf.data.true.v1 (PERFFILE): the records perf 6.1 and 7.2 count, and a
    stitched file both read (live, when they are here)."""
    name = "hotspot__perf.data.true.v1"
    want = _stats((KEPT / (name + ".stats.perf61.txt")).read_text())
    assert want == _stats((KEPT / (name + ".stats.perf72.txt")).read_text())
    r = run_cli("info", "--json", KEPT / name)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["header"]["version"] == 1
    got = dict(info["records"], TOTAL=info["total_records"])
    assert got == want
    out = tmp_path / "st.data"
    assert run_cli("stitch", "-q", KEPT / name, "-o", out).returncode == 0
    with PerfData.open(str(out)) as p:
        assert p.version == 2 and sum(1 for _ in p.records()) == want["TOTAL"]


@pytest.mark.parametrize("e", ["<", ">"])
@pytest.mark.parametrize("attr_size", [64, 72, 104])
def test_v1_header_byte_order_from_attr_size(tmp_path, e, attr_size):
    """A v2 file with the v1 magic reads the same, in either byte order: the order comes from
    attr_size (one of the ABI sizes + 16), as perf's try_all_file_abis takes it."""
    f = Synth(endian=e, attrs=[make_attr(e, size=attr_size)])
    f.sample(7, 100, cookie=1)
    f.deferred(7, 150, 1, [0x401000])
    path = f.save(tmp_path / "v2.data")
    raw = bytearray(path.read_bytes())
    raw[0:8] = b"PERFFILE"
    v1 = tmp_path / "v1.data"
    v1.write_bytes(bytes(raw))
    a = run_cli("report", "--json", path)
    b = run_cli("report", "--json", v1)
    assert a.returncode == b.returncode == 0, b.stderr
    assert a.stdout == b.stdout
    raw[16:24] = struct.pack(e + "Q", 200)          # no known ABI size: refused, with the offset
    v1.write_bytes(bytes(raw))
    r = run_cli("report", v1)
    assert r.returncode == 2 and b"offset 0x8" in r.stderr


# -- item 6: a pipe's end-of-features mark -----------------------------------------------------
def _feature_sections(path):
    with PerfData.open(str(path)) as p:
        return {bit: len(raw) for bit, raw in p.features.items()}


def test_pipe_end_of_features_mark_is_no_feature(tmp_path):
    """quipper's header_features_aligned-6.12 (pipe): its features end with an empty record of
    id 32, that perf's HEADER_LAST_FEATURE then; perf 7.x gives 32 to CPU_DOMAIN_INFO and
    rejects an empty one. The mark is no feature, and stitch writes no empty section."""
    name = "perf_data_converter__perf.data.piped.header_features_aligned-6.12"
    with PerfData.open(str(KEPT / name)) as p:
        for _ in p.records():
            pass
        assert p.features_end == 32 and 32 not in p.features
    out = tmp_path / "st.data"
    r = run_cli("stitch", "-q", KEPT / name, "-o", out)
    assert r.returncode == 0, r.stderr
    sections = _feature_sections(out)
    assert sections and 32 not in sections and all(sections.values())
    want = _stats((KEPT / (name + ".stats.perf72.txt")).read_text())["SAMPLE"]
    assert want == _stats((KEPT / (name + ".stats.perf61.txt")).read_text())["SAMPLE"] == 9


def test_perf72_reads_the_stitched_pipe_file(tmp_path):
    """The same, through the real perf 7.2: no "Invalid HEADER_CPU_DOMAIN_INFO", 9 samples."""
    tool = need_sid_perf()
    name = "perf_data_converter__perf.data.piped.header_features_aligned-6.12"
    shutil.copy(KEPT / name, tmp_path / "orig.data")
    assert run_cli("stitch", "-q", tmp_path / "orig.data", "-o", tmp_path / "st.data").returncode == 0
    p = subprocess.run([tool, "report", "--stats", "-i", "./st.data"], capture_output=True,
                       text=True, cwd=tmp_path, timeout=300)
    assert p.returncode == 0 and "Invalid" not in p.stderr, p.stderr
    assert _stats(p.stdout)["SAMPLE"] == 9


def test_writer_drops_empty_feature_sections(tmp_path):
    """Whatever the input held, an empty feature section is never written."""
    f = Synth()
    f.sample(7, 100)
    path = f.save(tmp_path / "e.data", features={3: b"", 32: b"",
                                                  5: b"\x04\0\0\0" + b"7.2\0"})
    assert _feature_sections(path) == {5: 8}     # HOSTNAME (3) empty, VERSION (5) kept



def test_script_mixed_callchain_and_not_same_on_both_paths(tmp_path):
    """One event with callchains, one without, the second appearing late: the C engine hands
    the file to the Python path at the first sample without one, and the text is the Python
    path's, every sample once (the engine's text before the hand-over is not repeated)."""
    st = C.PERF_SAMPLE_IDENTIFIER | C.PERF_SAMPLE_IP | C.PERF_SAMPLE_TID | C.PERF_SAMPLE_TIME \
        | C.PERF_SAMPLE_PERIOD
    f = Synth(attrs=[make_attr(sample_type=st | C.PERF_SAMPLE_CALLCHAIN, defer=False),
                     make_attr(sample_type=st, config=1, defer=False)])
    for i in range(300):
        f.sample(7, 1000 * (i + 1), attr_index=1 if i >= 250 and i % 2 else 0)
    path = f.save(tmp_path / "m.data")
    a = run_cli("script", "--no-symbols", "-q", path)
    b = run_cli("script", "--no-symbols", "-q", path, env=dict(os.environ, DEFERSTITCH_ACCEL="0"))
    assert a.returncode == b.returncode == 0, a.stderr
    assert a.stdout == b.stdout
    text = a.stdout.decode()
    assert text.count(" cpu-clock: ") == 300 - 25 and text.count("task-clock:  ffffffff81000010 ") == 25


def test_v1_pipe_header(tmp_path):
    """A pipe file under the v1 magic: its size field (16) gives the byte order
    (try_all_pipe_abis)."""
    src = KEPT / "perfparser__probe.data.stream"
    raw = bytearray(src.read_bytes())
    raw[0:8] = b"PERFFILE"
    v1 = tmp_path / "v1.data"
    v1.write_bytes(bytes(raw))
    a, b = run_cli("report", "--json", src), run_cli("report", "--json", v1)
    assert a.returncode == b.returncode == 0, b.stderr
    assert json.loads(a.stdout)["samples"] == json.loads(b.stdout)["samples"] == 1
