"""Several files as one recording (deferstitch/perfdata/recording.py), on real captures made
with the rig (tests/data/real/captures/README.md): a `perf record --threads -a` directory and a
`--switch-output=signal` sequence whose stacks cross the boundaries, against perf 7.2's own text
of the same files."""
import json
import lzma
import os
import re
import shutil
import struct
import subprocess

import pytest

from deferstitch.abi import consts as C
from conftest import CAPTURES, need_engine, need_perf61, need_sid_perf, run_cli
from perf_text import (CONTEXT_MAX, SCRIPT_HEAD, assert_script_equals_perf, parse_dump_samples,
                       parse_script)

THREADS = CAPTURES / "threads_syswide"
SWITCH = CAPTURES / "switch_signal"
SEQUENCE = sorted(p for p in SWITCH.iterdir() if re.search(r"\.\d{16}$", p.name))


def oracle(path):
    return lzma.open(str(path) + ".xz").read().decode("utf-8", "replace")


@pytest.fixture
def threads_dir(tmp_path):
    """The directory as perf record wrote it: `data` and the `data.N` (in tests/data they sit
    beside their .xz, which perf and we would take for streams too)."""
    d = tmp_path / "threads.data"
    d.mkdir()
    for name in ("data", "data.0", "data.1"):
        shutil.copy(THREADS / "threads.data" / name, d / name)
    return d


def cli(*args, env=None):
    r = run_cli(*args, env=dict(os.environ, **(env or {})))
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


def ips(text):
    """{(tid, time, n): ips} of perf script text. Not the comm: a sample taken just before its
    exec is named when its stack arrives (after the exec COMM) in a deferred recording, as
    perf names it, and when read in a stitched file, where nothing waits."""
    return {k: [f[0] for f in frames] for k, (_h, frames) in parse_script(text).items()}


def report(*args):
    return json.loads(cli("report", "--json", "-q", *args))


# -- perf record --threads ----------------------------------------------------------------------
def test_threads_directory_reads_as_perf_reads_it(threads_dir):
    """script of the directory: perf 7.2's samples, each with its frames (perf read the same
    directory in the guest: script.txt)."""
    ours = cli("script", threads_dir, "-q", "--no-symbols")
    theirs = oracle(THREADS / "script.txt")
    assert_script_equals_perf(ours, theirs)
    rep = report(threads_dir)
    assert rep["samples"] == len(parse_script(theirs)) == rep["stitched"] + rep["passed"] \
        + sum(rep["unmatched"].values())


@pytest.mark.parametrize("name", ["data.0", "data"])
def test_part_of_a_threads_directory_alone_names_the_directory(threads_dir, name):
    r = run_cli("report", threads_dir / name)
    assert r.returncode == 2
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1 and "perf record --threads directory" in lines[0], lines
    assert lines[0].endswith("give the directory %s instead" % threads_dir)


def test_stitch_of_a_threads_directory_is_one_perf_data(threads_dir, tmp_path):
    """One file with every sample: the same samples and stacks as the directory."""
    out = tmp_path / "st.data"
    r = run_cli("stitch", threads_dir, "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    whole = cli("script", threads_dir, "-q", "--no-symbols")
    assert ips(cli("script", out, "-q", "--no-symbols")) == ips(whole)    # (comm: see ips())
    assert report(out)["samples"] == report(threads_dir)["samples"]


@pytest.mark.parametrize("which", ["directory", "sequence"])
def test_perf61_and_perf7_read_the_stitched_file(threads_dir, tmp_path, which):
    """perf 6.1 (the host's) and perf 7.2 (the sid chroot) read the one stitched file: every
    sample, with our stacks."""
    inputs = [threads_dir] if which == "directory" else SEQUENCE
    out = tmp_path / "st.data"
    assert run_cli("stitch", *inputs, "-o", out, "-q").returncode == 0
    ours = ips(cli("script", *inputs, "-q", "--no-symbols"))
    perf, _version = need_perf61()
    p = subprocess.run([perf, "script", "-D", "-i", out], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    # (perf 6.1's text stops a stack at its own limits: its dump of the records, in full)
    assert sorted(parse_dump_samples(p.stdout)) == sorted(
        (tid, int(t.replace(".", "")), stack) for (tid, t, _n), stack in ours.items())
    tool = need_sid_perf()
    p = subprocess.run([tool, "script", "-i", "st.data"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    assert ips(p.stdout) == ours


# -- perf record --switch-output -----------------------------------------------------------------
DEFERRED = re.compile(r"^(\d+) 0x[0-9a-f]+ \[0x[0-9a-f]+\]: PERF_RECORD_CALLCHAIN_DEFERRED\(.*?\): "
                      r"(-?\d+)/(-?\d+): 0x([0-9a-f]+)")
DUMP_IP = re.compile(r"^\.{5}\s+\d+: ([0-9a-f]+)")


def deferred_stacks(dump):
    """{(tid, cookie): user ips} of every CALLCHAIN_DEFERRED in a `perf script -D`."""
    out, cur = {}, None
    for line in dump.split("\n"):
        m = DEFERRED.match(line)
        if m:
            cur = out.setdefault((int(m.group(3)), int(m.group(4), 16)), [])
            continue
        m = DUMP_IP.match(line) if cur is not None else None
        if m:
            ip = int(m.group(1), 16)
            if ip < CONTEXT_MAX:
                cur.append(ip)
        elif cur is not None and line.startswith(" ..."):
            cur = None
    return out


def left_with_cookie(text):
    """{(tid, time text, n): (kernel ips, cookie)} of the samples perf printed with their
    "(cookie)" frame: those it could not merge within that file."""
    out = {}
    for key, (_head, frames) in parse_script(text).items():
        out[key] = [f[0] for f in frames]
    cookies = {}
    head = None
    seen = {}
    for line in text.split("\n"):
        m = SCRIPT_HEAD.match(line)
        if m:
            k = (int(m.group(2)), m.group(3))
            n = seen[k] = seen.get(k, -1) + 1
            head = k + (n,)
        elif line.endswith(" (cookie) ([unknown])") and head is not None:
            cookies[head] = (out[head], int(line.split()[0], 16))
    return cookies


def test_switch_output_sequence_stitches_across_the_boundaries():
    """Each file alone keeps today's answer (perf's samples; those whose stack is in the next
    file unmatched); the sequence is one recording: every sample, and the samples perf left
    with their cookie at the end of a file get the stack perf's -D shows in a later file."""
    alone = [report(p) for p in SEQUENCE]
    texts = [oracle(str(p) + ".script.txt") if os.path.exists(str(p) + ".script.txt.xz") else ""
             for p in SEQUENCE]
    assert [r["samples"] for r in alone] == [len(parse_script(t)) for t in texts]
    rep = report(*SEQUENCE)
    assert rep["samples"] == sum(r["samples"] for r in alone)
    assert rep["samples"] == rep["stitched"] + rep["passed"] + sum(rep["unmatched"].values())
    ended = sum(r["unmatched"].get("stream-ended", 0) for r in alone)
    assert ended > 0 and rep["perf"]["stitched_across_files"] == ended
    assert rep["unmatched"].get("stream-ended", 0) == 0
    text = cli("report", *SEQUENCE)
    assert re.search(r"^ *of which with its stack in a later file +%d " % ended, text, re.M), text

    # perf's oracle of each crossing sample: its kernel frames and cookie from its file,
    # the user frames from the first later file's CALLCHAIN_DEFERRED of that task and cookie
    dumps = [deferred_stacks(oracle(str(p) + ".script-D.txt")) for p in SEQUENCE]
    expected = {}
    for n, text in enumerate(texts):
        for key, (kernel, cookie) in left_with_cookie(text).items():
            if (key[0], cookie) in dumps[n]:
                continue            # its stack came before it (perf merges only forward)
            later = next(d[(key[0], cookie)] for d in dumps[n + 1:] if (key[0], cookie) in d)
            expected[key] = kernel + later
    assert len(expected) == ended
    ours = ips(cli("script", *SEQUENCE, "-q", "--no-symbols"))
    assert {k: ours[k] for k in expected} == expected


@pytest.mark.parametrize("command", [["report", "--json"], ["script", "--no-symbols"], ["folded"],
                                     ["stitch", "-o", "-"]])
@pytest.mark.parametrize("which", ["directory", "sequence"])
def test_same_bytes_on_both_paths(threads_dir, command, which):
    """The engine reads the files in turn (engine.EngineRun.chunks, Engine.boundary): every
    output and report the Python path's, byte for byte."""
    need_engine("require")
    inputs = [threads_dir] if which == "directory" else SEQUENCE
    outs = [run_cli(command[0], *inputs, *command[1:], "-q",
                    env=dict(os.environ, DEFERSTITCH_ACCEL=accel)) for accel in ("0", "require")]
    assert outs[0].returncode == outs[1].returncode == 0, outs[1].stderr
    assert outs[0].stdout == outs[1].stdout != b""


def test_sequence_as_files_directory_or_glob(tmp_path):
    """The same answer from the files, their directory and a glob, in any order given, on
    both paths; stitch writes one perf.data with the same stacks, all whole."""
    d = tmp_path / "seq"
    d.mkdir()
    for p in SEQUENCE:
        shutil.copy(p, d / p.name)
    files = cli("folded", *SEQUENCE, "-q", "--no-symbols")
    assert cli("folded", d, "-q", "--no-symbols") == files
    assert cli("folded", str(d / "sw.data.*"), "-q", "--no-symbols") == files
    assert cli("folded", *reversed(SEQUENCE), "-q", "--no-symbols") == files   # named in time order
    assert cli("folded", *SEQUENCE, "-q", "--no-symbols", env={"DEFERSTITCH_ACCEL": "0"}) == files
    out = tmp_path / "st.data"
    assert run_cli("stitch", d, "-o", out, "-q").returncode == 0
    # (ips, not folded names: a stitched file's user frames are named by the maps at the
    # sample's time, the deferred input's when the stack arrived; so for any single file too)
    assert ips(cli("script", out, "-q", "--no-symbols")) == ips(cli("script", d, "-q", "--no-symbols"))
    st = report(out)
    assert st["samples"] == st["passed"] == report(d)["samples"]     # whole stacks: nothing deferred


def test_a_file_of_another_recording_is_refused():
    r = run_cli("report", SEQUENCE[0], THREADS.parent / "a_per_task" / "per-task.data")
    assert r.returncode == 2
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1 and "not of the same recording" in lines[0], lines
    r = run_cli("report", SEQUENCE[0], CAPTURES / "pipe" / "pipe.data")
    assert r.returncode == 2 and b"a pipe-mode perf.data cannot be part" in r.stderr, r.stderr


def test_an_output_onto_one_of_the_files_is_refused(threads_dir):
    before = (threads_dir / "data.1").read_bytes()
    r = run_cli("stitch", threads_dir, "-o", threads_dir / "data.1")
    assert r.returncode == 2 and b"is the input file" in r.stderr, r.stderr
    assert (threads_dir / "data.1").read_bytes() == before


def test_fleet_takes_a_directory_and_a_sequence_as_one_input_each(threads_dir, tmp_path):
    """fleet over a folder holding a --threads directory, a --switch-output recording's files
    and another capture: three inputs, each counted as the single commands count it."""
    pytest.importorskip("distributed", reason="Dask not installed: pip install 'deferstitch[fleet]'")
    d = tmp_path / "fleet"
    shutil.copytree(threads_dir, d / "threads.data")
    for p in SEQUENCE:
        shutil.copy(p, d / p.name)
    shutil.copy(CAPTURES / "a_per_task" / "per-task.data", d / "a.data")
    rep = tmp_path / "r.json"
    r = run_cli("fleet", d, "-o", tmp_path / "f.folded", "--report", rep, "--workers", 1, "--no-symbols")
    assert r.returncode == 0, r.stderr.decode()
    rows = json.loads(rep.read_text())["inputs"]
    assert len(rows) == 3 and not any(row["error"] for row in rows), rows
    want = {str(d / "a.data"): report(d / "a.data"), str(d / "threads.data"): report(d / "threads.data")}
    seq = next(row for row in rows if row["path"] not in want)
    assert report(seq["path"])["samples"] == report(*SEQUENCE)["samples"] == seq["samples"]
    for row in rows:
        if row["path"] in want:
            assert row["samples"] == want[row["path"]]["samples"]


# -- a synthetic sequence: the smallest crossing, and the dsos of every file ----------------------
def build_id_event(filename, byte):
    """One build_id_event of the BUILD_ID feature (perf's header.c write_build_id)."""
    name = filename.encode() + b"\0"
    name += b"\0" * (-len(name) % 8)
    body = struct.pack("<i", -1) + bytes([byte]) * 20 + b"\0" * 4 + name
    return struct.pack("<IHH", 67, 2, 8 + len(body)) + body


@pytest.fixture
def synthetic_sequence(tmp_path):
    """Two files of one recording: a sample at the end of the first, its stack in the second."""
    from synth import Synth
    first, second = Synth(), Synth()
    first.sample(5, 1000, cookie=7)
    first.round()
    second.deferred(5, 2000, 7, [0x401000, 0x402000])
    second.sample(5, 3000)
    second.round()
    files = [tmp_path / "x.data.2026120700000001", tmp_path / "x.data.2026120700000002"]
    first.save(files[0], {C.HEADER_BUILD_ID: build_id_event("/bin/a", 1)})
    second.save(files[1], {C.HEADER_BUILD_ID: build_id_event("/bin/a", 1) + build_id_event("/bin/b", 2)})
    return files


@pytest.mark.parametrize("accel", ["0", "require"])
def test_the_smallest_crossing(synthetic_sequence, accel, tmp_path):
    need_engine(accel)
    env = {"DEFERSTITCH_ACCEL": accel}
    alone = [report(p) for p in synthetic_sequence]
    assert alone[0]["unmatched"] == {"stream-ended": 1} and alone[1]["orphan_deferred"] == 1
    rep = json.loads(cli("report", "--json", *synthetic_sequence, env=env))
    assert (rep["samples"], rep["stitched"], rep["passed"], rep["unmatched"]) == (2, 1, 1, {})
    assert rep["perf"]["stitched_across_files"] == 1 and rep["orphan_deferred"] == 0
    stacks = ips(cli("script", "--no-symbols", *synthetic_sequence, env=env))
    assert stacks[(5, "0.000001", 0)] == [0xffffffff81000010, 0xffffffff81000020, 0x401000, 0x402000]
    out = tmp_path / "st.data"
    assert run_cli("stitch", *synthetic_sequence, "-o", out, env=dict(os.environ, **env)).returncode == 0
    info = json.loads(cli("info", "--json", "--no-symbols", out))
    assert [b["filename"] for b in info["features"]["BUILD_ID"]] == ["/bin/a", "/bin/b"]


@pytest.mark.parametrize("accel", ["0", "require"])
def test_damage_in_a_stream_names_that_file(threads_dir, accel):
    """A cut data.N: one line naming it and the offset, the same on both paths; a directory
    whose `data` is no --threads header says so."""
    need_engine(accel)
    cut = threads_dir / "data.1"
    cut.write_bytes(cut.read_bytes()[:50001])
    r = run_cli("report", threads_dir, env=dict(os.environ, DEFERSTITCH_ACCEL=accel))
    lines = r.stderr.decode().splitlines()
    assert r.returncode == 2 and len(lines) == 1, lines
    assert lines[0].startswith("deferstitch: %s: offset 0x" % cut), lines
    shutil.copy(CAPTURES / "a_per_task" / "per-task.data", threads_dir / "data")
    r = run_cli("report", threads_dir)
    assert r.returncode == 2 and b"no HEADER_DIR_FORMAT" in r.stderr, r.stderr
