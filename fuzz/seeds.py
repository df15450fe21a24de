"""Seed corpora for the fuzz harnesses: small cuts of the real captures, and the synthetic files.

Usage:
    python3 fuzz/seeds.py OUTDIR          # OUTDIR/perf/*.data, trace/*.dat, pages/*.pages, dwarf/*.elf

perf/  the first records of each real capture (tests/data/real/captures/*/*.data), rewritten by our writer so the attrs and features stay
       valid (tests/cuts.py, as tests/test_fuzz.py cuts its seeds); the compressed capture
       keeps its first zstd containers; the pipe one is a prefix.
trace/ the synthetic trace.dat files of tests/tracecmd_synth.py (deferred, variant,
       userstack, instances, missed), and the real ftrace capture cut to its first pages: converted to
       trace.dat v6 by ``trace-cmd convert`` (uncompressed: the page layout is what gets
       mutated) with kallsyms and printk formats dropped, so each case reads in milliseconds.
pages/ the synthetic files' ring-buffer pages alone, one CPU and two (fuzz/cases.py pages_case).
dwarf/ the captures' workload binaries (gcc, DWARF 5 with .debug_rnglists), whole (dwarf_case).
A seed that cannot be made (no captures, no trace-cmd) is skipped with a line on stderr.
"""
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import datafiles                                            # noqa: E402  (tests/datafiles.py)
from cuts import cut_perf                                   # noqa: E402  (tests/cuts.py)

CAPTURES = datafiles.unpack() / "captures"
PERF_CUTS = {"a_per_task/per-task.data": 200, "two_events_cpu_task/two.data": 800,
             "lost_per_task/lost.data": 300, "syswide/syswide.data": 700}
PAGES = 3                       # ring-buffer pages kept per CPU of the real trace.dat


def perf_seeds(out):
    for rel, n in PERF_CUTS.items():
        src = CAPTURES / rel
        if src.exists():
            cut_perf(src, out / (rel.split("/")[0] + ".data"), n)
        else:
            sys.stderr.write("seeds: %s not found, skipped\n" % src)
    src = CAPTURES / "compressed" / "compressed.data"
    if src.exists():
        cut_perf(src, out / "compressed.data", 13, compressed=True)
    src = CAPTURES / "pipe" / "pipe.data"
    if src.exists():
        (out / "pipe.data").write_bytes(src.read_bytes()[:48 << 10])


def trim_v6(src, dst, pages=PAGES, first_page=0):
    """A trace.dat v6 (trace-cmd.dat(5)) with empty kallsyms and printk sections and only
    ``pages`` ring-buffer pages of each CPU, from its page ``first_page`` on; the rest is copied.

    python3 fuzz/seeds.py --trim IN.dat OUT.dat PAGES [FIRST_PAGE]     (IN: v6, uncompressed)
    """
    b = Path(src).read_bytes()
    assert b[:10] == b"\x17\x08\x44tracing" and b[10:11] == b"6", "not a trace.dat v6"
    endian = ">" if b[12] else "<"
    page = struct.unpack_from(endian + "I", b, 14)[0]
    pos = 18

    def u(fmt):
        nonlocal pos
        v = struct.unpack_from(endian + fmt, b, pos)[0]
        pos += struct.calcsize(fmt)
        return v

    def skip(fmt):              # a size, then that many bytes
        nonlocal pos
        n = u(fmt)
        pos += n
    for magic in (b"header_page\0", b"header_event\0"):
        assert b[pos:pos + len(magic)] == magic
        pos += len(magic)
        skip("Q")
    for _ in range(u("I")):                 # ftrace formats
        skip("Q")
    for _ in range(u("I")):                 # systems: name, formats
        pos = b.index(b"\0", pos) + 1
        for _ in range(u("I")):
            skip("Q")
    head = b[:pos]
    skip("I")                               # kallsyms, dropped
    skip("I")                               # printk formats, dropped
    start = pos
    skip("Q")                               # saved cmdlines
    cmdlines = b[start:pos]
    cpus = u("I")
    start = pos
    if b[pos:pos + 10] == b"options  \0":
        pos += 10
        while True:
            opt = u("H")
            if opt == 0:
                break
            skip("I")
    options = b[start:pos]
    assert b[pos:pos + 10] == b"flyrecord\0", "only flyrecord files"
    pos += 10
    cpu = [(u("Q"), u("Q")) for _ in range(cpus)]
    out = bytearray(head + struct.pack(endian + "I", 0) + struct.pack(endian + "I", 0) + cmdlines
                    + struct.pack(endian + "I", cpus) + options + b"flyrecord\0")
    table = len(out)
    out += bytes(16 * cpus)
    data = []
    for off, size in cpu:
        skip_bytes = min(size, first_page * page)
        off, size = off + skip_bytes, min(size - skip_bytes, pages * page)
        out += bytes(-len(out) % page)
        data.append((len(out), size))
        out += b[off:off + size]
    for i, (off, size) in enumerate(data):
        struct.pack_into(endian + "QQ", out, table + 16 * i, off, size)
    Path(dst).write_bytes(bytes(out))


def trace_seeds(out):
    import tracecmd_synth
    tracecmd_synth.deferred(str(out / "synth-deferred.dat"))
    tracecmd_synth.deferred(str(out / "synth-variant.dat"), True)
    tracecmd_synth.userstack(str(out / "synth-userstack.dat"))
    tracecmd_synth.instances(str(out / "synth-instances.dat"))        # BUFFER options (-B)
    tracecmd_synth.missed_per_cpu(str(out / "synth-missed.dat"))      # missed events, peeks
    src = CAPTURES / "ftrace" / "trace-userstacktrace.dat"
    if not src.exists() or shutil.which("trace-cmd") is None:
        sys.stderr.write("seeds: %s or trace-cmd missing, real trace.dat seed skipped\n" % src)
        return
    with tempfile.TemporaryDirectory() as tmp:
        v6 = Path(tmp) / "v6.dat"
        subprocess.run(["trace-cmd", "convert", "-i", str(src), "-o", str(v6), "--file-version",
                        "6", "--compression", "none"], check=True, capture_output=True)
        trim_v6(v6, out / "ftrace-userstacktrace.dat")


def pages_seeds(out):
    """fuzz/cases.py pages_case inputs: a layout byte, then the synthetic files' CPU pages."""
    import tracecmd_synth as S
    page = S.PAGE
    for name, td in (("deferred", S.deferred(None, build=True)),
                     ("variant", S.deferred(None, variant=True, build=True))):
        datas = [c.data() for c in td.cpus]
        (out / ("%s-cpu0.pages" % name)).write_bytes(bytes([0]) + datas[0])
        n = max(len(d) for d in datas)
        both = b"".join(d + bytes(n - len(d)) for d in datas)   # empty pages: commit 0
        assert n % page == 0
        (out / ("%s-2cpus.pages" % name)).write_bytes(bytes([4]) + both)


def dwarf_seeds(out):
    for src in sorted((CAPTURES / "bin").glob("workload_?")):
        shutil.copy(src, out / (src.name + ".elf"))


def main(argv):
    if len(argv) in (5, 6) and argv[1] == "--trim":
        trim_v6(argv[2], argv[3], int(argv[4]), int(argv[5]) if len(argv) > 5 else 0)
        return 0
    if len(argv) != 2:
        sys.stderr.write(__doc__.split("Usage:\n")[1].split("\n\n")[0] + "\n")
        return 2
    out = Path(argv[1])
    for sub, make in (("perf", perf_seeds), ("trace", trace_seeds), ("pages", pages_seeds),
                      ("dwarf", dwarf_seeds)):
        (out / sub).mkdir(parents=True, exist_ok=True)
        make(out / sub)
    for sub in ("perf", "trace", "pages", "dwarf"):
        files = sorted((out / sub).iterdir())
        print("%s: %d seeds, %d bytes" % (out / sub, len(files), sum(f.stat().st_size for f in files)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
