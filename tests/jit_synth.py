"""Synthetic JIT inputs written by the tests, not by the code under test: jitdump files
(tools/perf/util/jitdump.h) and the MMAP2 records that make perf look for them."""
import struct
import subprocess

from deferstitch.abi import consts as C
from deferstitch.abi.attr import BIT_USE_CLOCKID, PerfEventAttr
from synth import make_attr

MAGIC = 0x4A695444
LOAD, MOVE, DEBUG_INFO, CLOSE, UNWINDING_INFO = range(5)
PROT_READ, PROT_WRITE, PROT_EXEC = 1, 2, 4


def monotonic_attr():
    """The test's attr as `perf record -k 1` makes it: use_clockid, clockid CLOCK_MONOTONIC."""
    raw = bytearray(make_attr().raw)
    flags = struct.unpack_from("<Q", raw, 40)[0] | BIT_USE_CLOCKID
    struct.pack_into("<Q", raw, 40, flags)
    struct.pack_into("<i", raw, 92, 1)
    return PerfEventAttr(bytes(raw), "<")


class Dump:
    """A jitdump built record by record; ``bytes()`` is the file."""

    def __init__(self, pid, e="<", flags=0):
        self.e, self.pid = e, pid
        self.data = bytearray(struct.pack(e + "IIIIIIQQ", MAGIC, 1, 40, 62, 0, pid, 1, flags))

    def _rec(self, rid, t, body):
        self.data += struct.pack(self.e + "IIQ", rid, 16 + len(body), t) + body

    def load(self, t, addr, size, name, index, code=None):
        code = code if code is not None else b"\xcc" * size
        self._rec(LOAD, t, struct.pack(self.e + "IIQQQQ", self.pid, self.pid, addr, addr, size, index)
                  + name.encode() + b"\0" + code)

    def move(self, t, old, new, size, index):
        self._rec(MOVE, t, struct.pack(self.e + "IIQQQQQ", self.pid, self.pid, new, old, new, size, index))

    def debug_info(self, t, addr, lines):
        body = struct.pack(self.e + "QQ", addr, len(lines))
        for a, line, name in lines:
            body += struct.pack(self.e + "Qii", a, line, 0) + name.encode() + b"\0"
        self._rec(DEBUG_INFO, t, body)

    def unwinding_info(self, t, blob):
        self._rec(UNWINDING_INFO, t, struct.pack(self.e + "QQQ", len(blob), 0, len(blob)) + blob)

    def close(self, t):
        self._rec(CLOSE, t, b"")

    def __bytes__(self):
        return bytes(self.data)


def mmap2(f, pid, start, length, path, time, prot=PROT_READ | PROT_EXEC, flags=2, pgoff=0):
    """A MMAP2 record (no build id) into the Synth ``f``."""
    name = path.encode() + b"\0"
    name += b"\0" * (-len(name) % 8)
    body = struct.pack("<iiQQQIIQQII", pid, pid, start, length, pgoff, 0, 0, 0, 0, prot, flags)
    f.raw(C.PERF_RECORD_MMAP2, body + name + f.trailer(pid, time))


def elf_segments(path):
    """PT_LOAD (p_offset, p_vaddr, p_filesz) of a binary, from readelf (not the code under test)."""
    out = subprocess.run(["readelf", "-lW", str(path)], capture_output=True, text=True).stdout
    return [(int(p[1], 16), int(p[2], 16), int(p[5], 16))
            for p in (line.split() for line in out.splitlines()) if p and p[0] == "LOAD"]


def map_elf(f, pid, base, path, segments, time):
    """MMAP2s of a binary's segments at ``base``, page-aligned as the loader maps them."""
    for off, vaddr, filesz in segments:
        length = ((vaddr & 0xfff) + filesz + 0xfff) & ~0xfff
        mmap2(f, pid, base + (vaddr & ~0xfff), length, path, time, pgoff=off & ~0xfff)


def elf_functions(path):
    """{name: vaddr} of a binary's defined functions, from nm (weak ones too: templates)."""
    out = subprocess.run(["nm", "--defined-only", str(path)], capture_output=True, text=True).stdout
    return {p[2]: int(p[0], 16) for p in (line.split() for line in out.splitlines())
            if len(p) == 3 and p[1] in "tTwW"}


def loads(path):
    """[(code_addr, code_size, name)] of a little-endian dump's JIT_CODE_LOAD records: the test's
    own reading, to check the code under test against."""
    data = open(path, "rb").read()
    pos, out = struct.unpack_from("<I", data, 8)[0], []
    while pos + 16 <= len(data):
        rid, size = struct.unpack_from("<II", data, pos)
        if rid == LOAD:
            addr, csize = struct.unpack_from("<QQ", data, pos + 32)
            out.append((addr, csize, data[pos + 56:data.index(b"\0", pos + 56)].decode()))
        pos += size
    return out
