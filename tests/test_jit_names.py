"""Names of run-time generated code on synthetic inputs the test writes itself: a /tmp/perf-PID.map
for executable anonymous memory (perf's map.c and symbol.c rules: which pid's file, a fork, data
mappings left alone) and a jitdump read directly (a name holds from its load time on: code put
again at an address, code moved), through script, folded, export, fleet and info, on the C
engine and on the Python path; damaged dumps cost names after the damage, never the output."""
import gzip
import json
import os
import shutil
import subprocess

import pytest

from conftest import ROOT, need_built, run_cli
from jit_synth import PROT_READ, PROT_WRITE, Dump, elf_functions, elf_segments, map_elf, mmap2, monotonic_attr
from perf_text import parse_script
from synth import Synth

ANON = 0x7F0000000000          # the executable anonymous mapping of pid 50
DATA = 0x7E0000000000          # a data (not executable) one
PID, CHILD = 50, 51
ENGINES = pytest.mark.parametrize("accel", ["0", "1"], ids=["python", "engine"])


def env(accel):
    e = dict(os.environ, DEFERSTITCH_ACCEL=accel)
    if accel == "1":
        need_built("the C engine (deferstitch._accel)", bool(list((ROOT / "deferstitch").glob("_accel*.so"))))
    return e


def stitched(f, tid, time, user, cookie):
    f.sample(tid, time, cookie=cookie)
    f.deferred(tid, time + 5, cookie, user)


def script_frames(out):
    """[(tid, [(sym+off, dso) of the user frames])] of our script output, in order."""
    got = []
    for (tid, _t, _n), (_head, frames) in parse_script(out).items():
        got.append((tid, [(sym, dso) for ip, sym, dso in frames if ip < 0xffff800000000000]))
    return got


# -- /tmp/perf-PID.map --------------------------------------------------------------------------
@pytest.fixture
def perfmap_case(tmp_path):
    root = tmp_path / "symfs"
    (root / "tmp").mkdir(parents=True)
    (root / "tmp" / "perf-50.map").write_text(
        "%x 20 jit_alpha\n%x 0x20 jit beta [tier 2]\n%x 10 ab\n" % (ANON + 0x100, ANON + 0x200, ANON + 0x300)
        + "0x%x 8 zero_fill_name\n%x 8 no_newline" % (ANON, ANON + 0x400))
    (root / "tmp" / "perf-51.map").write_text("%x 40 child_own\n" % (ANON + 0x10000))
    f = Synth()
    mmap2(f, PID, ANON, 0x1000, "//anon", 10)
    mmap2(f, PID, DATA, 0x1000, "//anon", 11, prot=PROT_READ | PROT_WRITE)
    stitched(f, PID, 100, [ANON + 0x110, ANON + 0x21f, ANON + 0x301, ANON + 0x500, DATA + 8], cookie=1)
    f.fork(CHILD, 200, ptid=PID)
    mmap2(f, CHILD, ANON + 0x10000, 0x1000, "//anon", 210)
    stitched(f, CHILD, 300, [ANON + 0x10004, ANON + 0x104, ANON + 0x3, ANON + 0x401], cookie=2)
    return f.save(tmp_path / "map.data"), root


@ENGINES
def test_perf_map_names_as_perf(perfmap_case, accel):
    path, root = perfmap_case
    r = run_cli("script", path, "--symfs", root, env=env(accel))
    assert r.returncode == 0, r.stderr
    got = script_frames(r.stdout.decode())
    m50, m51 = "/tmp/perf-50.map", "/tmp/perf-51.map"
    assert got == [
        (PID, [("jit_alpha+0x10", m50), ("jit beta [tier 2]+0x1f", m50),
               ("[unknown]", m50),      # "ab": perf skips names shorter than 3 characters
               ("[unknown]", m50),      # no entry there
               ("[unknown]", "//anon")]),   # not executable: not perf's map dso
        # the child's own mapping is its map file's; what it inherited stays the parent's
        (CHILD, [("child_own+0x4", m51), ("jit_alpha+0x4", m50), ("zero_fill_name+0x3", m50),
                 ("no_newlin+0x1", m50)]),      # perf drops a line's last character, newline or not
    ]


@ENGINES
def test_perf_map_names_in_every_output(perfmap_case, accel, tmp_path):
    path, root = perfmap_case
    e = env(accel)
    folded = run_cli("folded", path, "--symfs", root, env=e)
    assert folded.returncode == 0, folded.stderr
    assert ":51;no_newlin;zero_fill_name;jit_alpha;child_own;" in folded.stdout.decode()
    assert "[perf-50.map];jit beta [tier 2];jit_alpha" in folded.stdout.decode()
    out = tmp_path / "s.json"
    r = run_cli("export", path, "--symfs", root, "--format", "speedscope", "-o", out, env=e)
    assert r.returncode == 0, r.stderr
    names = {fr["name"] for fr in json.loads(out.read_text())["shared"]["frames"]}
    assert {"jit_alpha", "jit beta [tier 2]", "child_own", "zero_fill_name", "no_newlin"} <= names
    pb = tmp_path / "p.pb.gz"
    assert run_cli("export", path, "--symfs", root, "--format", "pprof", "-o", pb, env=e).returncode == 0
    assert b"jit beta [tier 2]" in gzip.decompress(pb.read_bytes())
    svg = tmp_path / "f.svg"
    r = run_cli("flamegraph", path, "--symfs", root, "-o", svg, env=e)
    assert r.returncode == 0, r.stderr
    assert 'data-name="jit beta [tier 2]"' in svg.read_text()
    info = run_cli("info", path, "--symfs", root, env=e).stdout.decode()
    line = next(ln for ln in info.splitlines() if ln.startswith("/tmp/perf-50.map"))
    assert "perf map: 4 entries" in line and str(root / "tmp" / "perf-50.map") in line


def test_perf_map_names_in_fleet(perfmap_case, tmp_path):
    path, root = perfmap_case
    pytest.importorskip("distributed", reason="Dask not installed: pip install 'deferstitch[fleet]'")
    single = run_cli("folded", path, "--symfs", root).stdout.decode()
    out = tmp_path / "fleet.folded"
    r = run_cli("fleet", path, "--symfs", root, "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.read_text() == single


# -- jitdump ------------------------------------------------------------------------------------
def jit_case(tmp_path, dump_bytes, attr=None):
    root = tmp_path / "symfs"
    (root / "tmp").mkdir(parents=True, exist_ok=True)
    (root / "tmp" / "jit-50.dump").write_bytes(dump_bytes)
    f = Synth(attrs=[attr or monotonic_attr()])
    mmap2(f, PID, ANON, 0x10000, "//anon", 10)
    mmap2(f, PID, 0x7D0000000000, 0x1000, "/tmp/jit-50.dump", 11)
    stitched(f, PID, 200, [ANON + 0x110, ANON + 0x210], cookie=1)
    stitched(f, PID, 350, [ANON + 0x110], cookie=2)
    stitched(f, PID, 450, [ANON + 0x410, ANON + 0x210], cookie=3)
    return f.save(tmp_path / "jit.data"), root


def reuse_and_move():
    d = Dump(PID)
    d.load(120, ANON + 0x100, 0x40, "py::one:x.py", 1)
    d.debug_info(125, ANON + 0x200, [(ANON + 0x200, 7, "x.py")])
    d.load(130, ANON + 0x200, 0x40, "py::two:x.py", 2)
    d.unwinding_info(135, b"\0" * 24)
    d.load(300, ANON + 0x100, 0x40, "py::three:x.py", 3)     # the same place, new code
    d.move(400, ANON + 0x200, ANON + 0x400, 0x40, 2)          # two moves; its old place stays
    d.close(500)
    return bytes(d)


@ENGINES
def test_jitdump_names_from_their_load_time(tmp_path, accel):
    path, root = jit_case(tmp_path, reuse_and_move())
    r = run_cli("script", path, "--symfs", root, env=env(accel))
    assert r.returncode == 0, r.stderr
    assert r.stderr == b""
    dump = "/tmp/jit-50.dump"
    want = [(PID, [("py::one:x.py+0x10", dump), ("py::two:x.py+0x10", dump)]),
            (PID, [("py::three:x.py+0x10", dump)]),
            (PID, [("py::two:x.py+0x10", dump), ("py::two:x.py+0x10", dump)])]
    if accel == "1":
        # the engine hands the names side-band records' times: none comes after the load at
        # 300, so the second sample may take either name; the rest must be exact
        got = script_frames(r.stdout.decode())
        assert got[0] == want[0] and got[2] == want[2]
        assert got[1][1][0][0] in ("py::one:x.py+0x10", "py::three:x.py+0x10")
    else:
        assert script_frames(r.stdout.decode()) == want


def test_jitdump_without_monotonic_clock_warns_and_names(tmp_path):
    from synth import make_attr
    path, root = jit_case(tmp_path, reuse_and_move(), attr=make_attr())
    r = run_cli("script", path, "--symfs", root, env=env("0"))
    assert r.returncode == 0, r.stderr
    err = r.stderr.decode().strip().splitlines()
    assert len(err) == 1 and "perf record -k 1" in err[0], err
    got = script_frames(r.stdout.decode())
    # without comparable times each address takes the code put there last
    assert got[0][1][0][0] == "py::three:x.py+0x10" and got[2][1][0][0] == "py::two:x.py+0x10"


def damaged(kind):
    good = Dump(PID)
    good.load(120, ANON + 0x100, 0x40, "py::one:x.py", 1)
    data = bytes(good)
    cut = len(data)
    more = Dump(PID)
    more.load(130, ANON + 0x200, 0x40, "py::two:x.py", 2)
    rec = bytes(more)[40:]
    if kind == "truncated":
        return data + rec[:30], cut, "only"
    if kind == "size-below-header":
        return data + rec[:4] + (8).to_bytes(4, "little") + rec[8:], cut, "below"
    if kind == "name-overruns":
        return data + rec[:4] + (60).to_bytes(4, "little") + rec[8:60], cut, "overrun"
    if kind == "bad-magic":
        return b"XXXX" + data[4:] + rec, 0, "magic"
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["truncated", "size-below-header", "name-overruns", "bad-magic"])
@ENGINES
def test_damaged_jitdump_one_line_and_names_before_it(tmp_path, kind, accel):
    data, offset, word = damaged(kind)
    path, root = jit_case(tmp_path, data)
    r = run_cli("script", path, "--symfs", root, env=env(accel))
    assert r.returncode == 0
    err = r.stderr.decode().strip().splitlines()
    assert len(err) == 1 and "Traceback" not in r.stderr.decode(), err
    assert err[0].startswith("deferstitch: ") or err[0].startswith(str(root))
    assert "jit-50.dump: offset %#x: " % offset in err[0] and word in err[0], err[0]
    got = script_frames(r.stdout.decode())
    assert len(got) == 3            # every sample is still there
    first = got[0][1][0][0]
    assert first == ("[unknown]" if kind == "bad-magic" else "py::one:x.py+0x10")
    assert got[0][1][1][0] == "[unknown]"    # the damaged record's name is not guessed
    info = run_cli("info", path, "--symfs", root).stdout.decode()
    assert any(ln.startswith("/tmp/jit-50.dump") and "offset %#x" % offset in ln for ln in info.splitlines())


def test_jitdump_in_info(tmp_path):
    path, root = jit_case(tmp_path, reuse_and_move())
    info = run_cli("info", path, "--symfs", root).stdout.decode()
    line = next(ln for ln in info.splitlines() if ln.startswith("/tmp/jit-50.dump"))
    assert "jitdump: 4 pieces of code name /tmp/perf-50.map" in line


def test_perf_map_row_says_the_dump_names_first(tmp_path):
    path, root = jit_case(tmp_path, reuse_and_move())
    info = run_cli("info", path, "--symfs", root).stdout.decode()
    line = next(ln for ln in info.splitlines() if ln.startswith("/tmp/perf-50.map"))
    assert "jitdump /tmp/jit-50.dump first, then perf map" in line and "No such file" in line


@pytest.mark.parametrize("filename,prot,flags,want", [
    ("//anon", 5, 2, "/tmp/perf-7.map"),
    ("//anon", 3, 2, "//anon"),                        # data: perf keeps the name
    ("/dev/zero (deleted)", 5, 1, "/tmp/perf-7.map"),
    ("/anon_hugepage (deleted)", 5, 1, "/tmp/perf-7.map"),
    ("/memfd:jit (deleted)", 5, 0x40000, "/tmp/perf-7.map"),   # MAP_HUGETLB
    ("[heap]", 7, 2, "/tmp/perf-7.map"),
    ("[stack]", 7, 2, "/tmp/perf-7.map"),
    ("/SYSV00000000 (deleted)", 5, 1, "/tmp/perf-7.map"),
    ("/usr/lib/libfoo.so", 5, 2, "/usr/lib/libfoo.so"),
    ("[vdso]", 5, 2, "[vdso]"),
    ("[heap]x", 7, 2, "[heap]x"),
])
def test_which_mappings_are_perf_map_dsos(filename, prot, flags, want):
    """map.c's map__new: anonymous (//anon, /dev/zero, /anon_hugepage, MAP_HUGETLB) or no-dso
    ([stack, /SYSV, [heap]) memory that is executable becomes /tmp/perf-PID.map."""
    from deferstitch.symbols.perfmap import map_dso
    assert map_dso(filename, 7, prot, flags) == want


def test_fifos_named_like_a_dump_or_a_map_never_block(tmp_path):
    """A FIFO where the dump or the map file should be: refused at once (never a hang), one line
    for the dump, every sample still written."""
    path, root = jit_case(tmp_path, b"")
    os.unlink(root / "tmp" / "jit-50.dump")
    os.mkfifo(root / "tmp" / "jit-50.dump")
    os.mkfifo(root / "tmp" / "perf-50.map")
    r = run_cli("script", path, "--symfs", root, timeout=120)
    assert r.returncode == 0, r.stderr
    err = r.stderr.decode().strip().splitlines()
    assert len(err) == 1 and "jit-50.dump" in err[0] and "not a regular file" in err[0], err
    assert len(script_frames(r.stdout.decode())) == 3
    info = run_cli("info", path, "--symfs", root, timeout=120)
    assert info.returncode == 0, info.stderr


def test_nested_reuse_names_follow_the_time(tmp_path):
    """Pieces inside pieces (x at 100, c over part of x at 300, a long one over both at 500):
    every load time is a moment names may change, and each time names its newest code."""
    from deferstitch.symbols.jitnames import JitNames
    d = Dump(PID)
    d.load(100, ANON + 0x100, 0x40, "x", 1)
    d.load(300, ANON + 0x120, 0x40, "c", 2)
    d.load(500, ANON, 0x1000, "long", 3)
    (tmp_path / "jit-50.dump").write_bytes(bytes(d))
    jit = JitNames()
    jit.add_dump(PID, str(tmp_path / "jit-50.dump"))
    changed = [t for t in (50, 150, 350, 550) if jit.advance(t)]
    assert changed == [150, 350, 550]
    for t, name, start in ((150, "x", 0x100), (350, "c", 0x120), (550, "long", 0)):
        jit.now = t
        assert jit.find("/tmp/perf-50.map", ANON + 0x130)[:2] == (name, 0x130 - start)


# -- a dump's code inside a file's mapping (V8's embedded builtins in libnode's text) -----------
LIB = 0x7C0000000000


@ENGINES
def test_dump_code_in_a_file_mapping_named_from_its_load_time(tmp_path, accel):
    """perf inject --jit overlays code a dump loads inside a file's mapping with the MMAP2 of
    its jitted ELF file at its load time: from then on the dump names those addresses, before
    it (and around the code) the file does."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed: apt-get install gcc")
    root = tmp_path / "symfs"
    exe = root / "opt" / "lib" / "libv8like.so"
    exe.parent.mkdir(parents=True)
    (tmp_path / "lib.c").write_text("int builtins(int x) { return x * 3 + 1; }\n"
                                    "int around(int x) { return x - 7; }\n")
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-o", exe, tmp_path / "lib.c"], check=True)
    funcs = elf_functions(exe)
    code, other = LIB + funcs["builtins"], LIB + funcs["around"]
    d = Dump(PID)
    d.load(150, code, other - code, "Builtin:ArrayPrototypePush", 1)
    (root / "tmp").mkdir()
    (root / "tmp" / "jit-50.dump").write_bytes(bytes(d))
    f = Synth(attrs=[monotonic_attr()])
    map_elf(f, PID, LIB, "/opt/lib/libv8like.so", elf_segments(exe), 10)
    mmap2(f, PID, 0x7D0000000000, 0x1000, "/tmp/jit-50.dump", 11)
    stitched(f, PID, 100, [code + 4, other + 2], cookie=1)
    mmap2(f, PID, DATA, 0x1000, "//anon", 160, prot=PROT_READ | PROT_WRITE)   # the clock moves on
    stitched(f, PID, 200, [code + 4, other + 2], cookie=2)
    path = f.save(tmp_path / "overlay.data")
    r = run_cli("script", path, "--symfs", root, env=env(accel))
    assert r.returncode == 0, r.stderr
    lib = "/opt/lib/libv8like.so"
    assert script_frames(r.stdout.decode()) == [
        (PID, [("builtins+0x4", lib), ("around+0x2", lib)]),
        (PID, [("Builtin:ArrayPrototypePush+0x4", "/tmp/jit-50.dump"), ("around+0x2", lib)])]
