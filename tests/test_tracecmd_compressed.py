"""trace.dat v7 with compressed CPU data (zstd, zlib) read by our page reader: one chunk at a
time decompressed (deferstitch/_tracedat.c, its twin tracecmd/walk.py), over the chunk tables
of tracecmd/headers.py's flyrecord().

- the v7 conversions carried in tests/data/tracecmd-v7 (and the real zstd capture) give the
  outputs of their v6 originals, byte for byte, on the C feed, the Python feed over our pages
  and libtracecmd's reading;
- the C walker and walk.py give the same records, counts, damage offsets and texts, zlib as
  zstd (bookworm's libtracecmd 1.3 cannot open a zlib file: those are walked from the chunk
  tables directly);
- damaged chunks (bytes flipped, sizes changed, the file cut) are one line, exit 2, with what
  came before them."""
import json
import os
import shutil
import struct
import subprocess

import pytest

import tracecmd_synth as S
from conftest import CAPTURES, DATA, need_built, run_cli

V7 = DATA / "tracecmd-v7"
REAL = CAPTURES / "ftrace" / "trace-userstacktrace.dat"
PYFEED = {**os.environ, "DEFERSTITCH_TRACE_FEED": "python"}
SLOW = {**os.environ, "DEFERSTITCH_ACCEL": "0"}
OUTPUTS = (("report", "--json"), ("folded",), ("script",))


def walker_built():
    from deferstitch.tracecmd import pages
    need_built("the page reader (deferstitch._tracedat)", pages.available())


@pytest.fixture(scope="module")
def v6(tmp_path_factory):
    """The v6 originals of the carried v7 files (tests/data/README.md), made again."""
    d = tmp_path_factory.mktemp("v6")
    return {"big": S.big(d / "big.dat", 0.3), "instances": S.instances(d / "instances.dat")}


def opens(path):
    """libtracecmd here opens the file (1.3 has no zlib)."""
    from deferstitch.errors import DeferstitchError
    from deferstitch.tracecmd.bridge import Trace
    try:
        Trace(path).close()
    except DeferstitchError:
        return False
    return True


def _out(path, args, env=None):
    p = run_cli("trace", args[0], path, *args[1:], env=env)
    return p.returncode, p.stdout, p.stderr


def test_v7_gives_the_v6_outputs(v6):
    """Every output of a zstd (and, where libtracecmd opens it, zlib) v7 file is its v6
    original's, on each path; the records come from our walker (not libtracecmd)."""
    walker_built()
    from deferstitch.tracecmd.bridge import Trace
    compared = 0
    for name, orig in v6.items():
        for z in ("zstd", "zlib"):
            path = V7 / ("%s-%s.dat" % (name, z))
            if not opens(path):
                assert z == "zlib", path
                continue
            with Trace(path) as t:
                assert all(h.compression == z and h.walker is not None
                           for h in t.handles.values()), path
            for args in OUTPUTS:
                want = _out(orig, args)
                assert want[0] == 0 and want[1], (orig, args, want[2])
                for env in (None, PYFEED, SLOW):
                    assert _out(path, args, env) == want, (path, args, env)
                compared += 1
    assert compared >= 6


def test_v7_gives_the_v6_outputs_with_or_without_the_c_modules(v6):
    """The same outputs where the C modules are absent (the suite's second run): zstd through
    libtracecmd, its pages walked first by walk.py; zlib, which libtracecmd 1.3 cannot open,
    read by walk.Walker alone."""
    for name, orig in v6.items():
        for z in ("zstd", "zlib"):
            path = V7 / ("%s-%s.dat" % (name, z))
            for args in OUTPUTS:
                want = _out(orig, args)
                assert want[0] == 0 and want[1], (orig, args, want[2])
                for env in (None, SLOW):
                    assert _out(path, args, env) == want, (path, args, env)


def test_real_zstd_capture_gives_its_v6_outputs(tmp_path):
    walker_built()
    if shutil.which("trace-cmd") is None:
        pytest.skip("trace-cmd not installed: apt-get install trace-cmd")
    from deferstitch.tracecmd.bridge import Trace
    with Trace(REAL) as t:
        assert t.handles["top"].compression == "zstd" and t.handles["top"].walker is not None
    orig = tmp_path / "real-v6.dat"
    subprocess.run(["trace-cmd", "convert", "-i", str(REAL), "-o", str(orig), "--file-version",
                    "6", "--compression", "none"], check=True, capture_output=True)
    for args in OUTPUTS:
        want = _out(orig, args)
        assert want[0] == 0 and want[1], want[2]
        for env in (None, PYFEED):
            assert _out(REAL, args, env) == want, (args, env)


def _layout(path, like):
    """[(buffer name, cpus as the walkers take them, compression)] of a v7 file, from its
    chunk tables alone (headers.flyrecord, decompressed_offsets); common fields from ``like``."""
    from deferstitch.tracecmd import headers
    from deferstitch.tracecmd.bridge import Trace
    with Trace(like) as t:
        h = t.handles["top"]
        head = (h.page_size, h.long_size, h.big_endian, h.common_layout)
    fd = os.open(path, os.O_RDONLY)
    try:
        buffers = headers.flyrecord(str(path), fd)
    finally:
        os.close(fd)
    out, top_end = [], None
    for b in buffers:
        start = head[0] if b.name == "" else top_end
        firsts, end = headers.decompressed_offsets(b, start)
        if b.name == "":
            top_end = end
        cpus = []
        for c in sorted(b.cpus, key=lambda c: c.cpu):
            if c.cpu not in firsts:
                continue
            total = sum(n for _o, _z, n in c.chunks)
            tail = None if c.damage is None else (firsts[c.cpu] + total, c.damage[1])
            cpus.append((c.cpu, firsts[c.cpu], total, c.chunks, tail))
        out.append((b.name, cpus, b.compression))
    return head, out


def _walks(path, like, tables=None):
    """{buffer: (C scan, Python scan, the C walker's records)} walked from the chunk tables (of
    ``tables``, the file before it was cut: trace-cmd writes the BUFFER option after the data)."""
    from deferstitch import _tracedat
    from deferstitch.tracecmd import walk
    head, layout = _layout(tables or path, like)
    ps, ls, big, common = head
    size = os.path.getsize(path)
    out = {}
    with open(path, "rb") as f:
        for name, cpus, z in layout:
            c = _tracedat.Walker(f.fileno(), size, ps, ls, big, common, cpus, z).scan()
            py = walk.scan(f.fileno(), size, ps, ls, big, common[4], cpus, z)
            recs = []
            w = _tracedat.Walker(f.fileno(), size, ps, ls, big, common, cpus, z)
            try:
                for r in w:
                    recs.append(r)
            except _tracedat.Damaged as err:
                recs.append(("damaged",) + err.args)
            out[name] = (c, py, recs)
    return out


def test_walks_of_zstd_and_zlib_are_one(v6):
    """From the chunk tables alone: the C scan is walk.py's, zlib's records are zstd's, and
    they are the v6 original's (but for offsets: libtracecmd's count the decompressed data,
    which our offsets for them are, where libtracecmd opens the file)."""
    walker_built()
    from deferstitch.tracecmd.bridge import Trace
    for name, orig in v6.items():
        walks = {z: _walks(V7 / ("%s-%s.dat" % (name, z)), orig) for z in ("zstd", "zlib")}
        for z, got in walks.items():
            for buf, (c, py, recs) in got.items():
                assert c == py, (name, z, buf)
                assert all(d is None for _i, _n, d, _f in c) and recs, (name, z, c)
        assert walks["zstd"] == walks["zlib"], name
        with Trace(orig) as t:
            want = {("" if n == "top" else n): [r[:5] + r[6:] for r in h.iter_records()]
                    for n, h in t.handles.items()}
        assert {b: [r[:5] + r[6:] for r in recs] for b, (_c, _p, recs) in walks["zstd"].items()} \
            == want, name
        with Trace(V7 / ("%s-zstd.dat" % name)) as t:     # our offsets are libtracecmd's
            firsts = {("" if n == "top" else n): sorted(f for f, _s in h.extents.values())
                      for n, h in t.handles.items()}
        _head, layout = _layout(V7 / ("%s-zstd.dat" % name), orig)
        assert {b: sorted(c[1] for c in cpus) for b, cpus, _z in layout} == firsts, name


def _chunk_headers(path):
    """[(file offset of a chunk's header, compressed size, size)] of CPU 0 of the top buffer."""
    from deferstitch.tracecmd import headers
    fd = os.open(path, os.O_RDONLY)
    try:
        top = [b for b in headers.flyrecord(str(path), fd) if b.name == ""][0]
    finally:
        os.close(fd)
    return [(off - 8, z, n) for off, z, n in sorted(top.cpus, key=lambda c: c.cpu)[0].chunks]


def _changed(path, tmp_path, name, change):
    data = bytearray(path.read_bytes())
    change(data)
    out = tmp_path / (name + path.suffix)
    out.write_bytes(bytes(data))
    return out


def test_damaged_chunks_one_line_good_part_kept(tmp_path):
    """A chunk in the middle of the real capture's CPU data with bytes flipped, or saying
    another size than it decompresses to, or a size not of whole pages; its last chunk's
    compressed size past the end of the file: one line naming the chunk, exit 2, the report of
    the records before it, the same from the C feed, the Python feed and libtracecmd's path."""
    walker_built()
    full = json.loads(run_cli("trace", "report", REAL, "--json").stdout)["samples"]
    chunks = _chunk_headers(REAL)
    assert len(chunks) > 10
    at, zsize, size = chunks[len(chunks) // 2]
    last = chunks[-1][0]
    e = "<"

    def flip(d):
        for i in range(at + 8 + zsize // 3, at + 8 + zsize // 3 + 16):
            d[i] ^= 0x5A

    cases = {
        "flipped": (flip, "(%d bytes) does not decompress to the %d bytes it says (zstd)"
                    % (zsize, size)),
        "smaller": (lambda d: struct.pack_into(e + "I", d, at + 4, size - 4096),
                    "does not decompress to the %d bytes it says" % (size - 4096)),
        "not-pages": (lambda d: struct.pack_into(e + "I", d, at + 4, size + 100),
                      "holds %d bytes, not a whole number of 4096-byte pages" % (size + 100)),
        "past-the-file": (lambda d: struct.pack_into(e + "I", d, last, 1 << 30),
                          "run past the end of CPU 0's data"),
    }
    for name, (change, words) in cases.items():
        bad = _changed(REAL, tmp_path, name, change)
        runs = [run_cli("trace", "report", bad, "--json", env=env) for env in (None, PYFEED, SLOW)]
        p = runs[0]
        err = p.stderr.decode()
        assert p.returncode == 2 and err.count("\n") == 1, (name, err)
        assert err.startswith("deferstitch: %s: offset 0x" % bad) and words in err, (name, err)
        assert "of the zstd-decompressed data: CPU 0: its chunk" in err or \
            "of the zstd-decompressed data: CPU 0: chunk" in err, (name, err)
        d = json.loads(p.stdout)
        assert d["complete"] is False and d["conserved"] and 0 < d["samples"] < full, (name, d)
        for q in runs[1:]:
            assert (q.returncode, q.stdout, q.stderr) == (p.returncode, p.stdout, p.stderr), name
        for cmd in ("folded", "script"):
            q = run_cli("trace", cmd, bad)
            assert q.returncode == 2 and q.stderr.decode() == err and q.stdout, (name, cmd)


def test_damaged_chunks_c_and_python_walks_agree(v6, tmp_path):
    """On zlib as on zstd (walked from the tables): bytes flipped in a chunk, sizes changed,
    the file cut inside a chunk; the same counts, offsets and texts from both walkers, and the
    damage found."""
    walker_built()
    for z in ("zstd", "zlib"):
        path = V7 / ("big-%s.dat" % z)
        chunks = _chunk_headers(path)
        at, zsize, size = chunks[len(chunks) // 2]

        def flip(d):        # the frame's (stream's) head: in the data, a flip may decode
            for i in range(at + 8, at + 8 + 16):
                d[i] ^= 0xFF
        cases = {
            "flipped": (flip, "does not decompress"),
            "bigger": (lambda d: struct.pack_into("<I", d, at + 4, size + 4096),
                       "does not decompress to the %d bytes" % (size + 4096)),
            "huge": (lambda d: struct.pack_into("<I", d, at + 4, 1 << 30),
                     "more than a chunk of 16 pages holds"),
            "cut": (lambda d: d.__delitem__(slice(at + 8 + zsize // 2, None)),
                    "cannot be read (end of file): the file was cut while it was read?"),
        }
        for name, (change, words) in cases.items():
            bad = _changed(path, tmp_path, "%s-%s" % (z, name), change)
            got = _walks(bad, v6["big"], path if name == "cut" else None)[""]
            c, py, recs = got
            assert c == py, (z, name, c, py)
            whys = [d[1] for _i, _n, d, _f in c if d is not None]
            assert any(words in w for w in whys), (z, name, whys)
            assert recs[-1][0] == "damaged" and any(n for _i, n, _d, _f in c), (z, name, c)


def test_a_missing_library_leaves_it_to_the_python_walker(monkeypatch):
    """Where the C walker cannot decompress (no libzstd.so.1), walk.py's walker hands out the
    records: the same outputs."""
    walker_built()
    from deferstitch import _tracedat
    from deferstitch.tracecmd import pages
    from deferstitch.tracecmd.bridge import Trace
    assert _tracedat.decompressor("zstd") and _tracedat.decompressor("zlib")
    assert not _tracedat.decompressor("lz4")
    assert _tracedat.MAX_CHUNK_PAGES == __import__("deferstitch.tracecmd.walk",
                                                   fromlist=["walk"]).MAX_CHUNK_PAGES
    with Trace(REAL) as t:
        want = [(ev.ts, ev.cpu, ev.offset) for ev in t]
    monkeypatch.setattr(pages._tracedat, "decompressor", lambda name: False, raising=False)
    with Trace(REAL) as t:
        assert not pages.is_c_walker(t.handles["top"].walker)
        assert [(ev.ts, ev.cpu, ev.offset) for ev in t] == want
