"""Inlined frames at every address of a binary, as perf 7.x names them and as we do.

``every_address_data(binary, addrs, path)`` writes a perf.data (our synth writer) where one
process maps the binary's executable PT_LOAD segments as the loader would (a PIE at PIE_BASE)
and takes two user-mode samples per address: the address as the leaf, and as a caller's frame
below an unmapped leaf. ``perf script -F tid,time,ip,sym,dso`` of the sid chroot's perf 7.x
(tools/sid-perf: libdw, else its addr2line child, as Debian builds it) names each address, and
``deferstitch script`` the same file; ``script_chains`` reads either output to
{(address, position): [(sym, dso), ...]}, inlined frames included, offsets left out.
"""
import re
import struct

from synth import Synth, make_attr
from deferstitch.abi import consts as C

PIE_BASE = 0x555555554000
PID = 4242


def _pad(b):
    b += b"\0"
    return b + b"\0" * (-len(b) % 8)


def load_segments(binary):
    """[(vaddr, memsz, offset)] of the PT_LOAD segments that execute, and whether it is a PIE."""
    with open(binary, "rb") as f:
        raw = f.read(64)
        e_type, = struct.unpack_from("<H", raw, 16)
        phoff, = struct.unpack_from("<Q", raw, 32)
        phentsize, phnum = struct.unpack_from("<HH", raw, 54)
        f.seek(phoff)
        ph = f.read(phentsize * phnum)
    out = []
    for i in range(phnum):
        p_type, p_flags, p_offset, p_vaddr, _pa, _fsz, p_memsz, _al = struct.unpack_from(
            "<IIQQQQQQ", ph, i * phentsize)
        if p_type == 1 and p_flags & 1:
            out.append((p_vaddr, p_memsz, p_offset))
    return out, e_type == 3


TIME = re.compile(r"\s(\d+\.\d+):")
OFFSET = re.compile(r"\+0x[0-9a-f]+$")
OTHER = 0x10000             # an address no map holds: the leaf of the caller-position samples


def every_address_data(binary, addrs, path, comm="prog"):
    """A perf.data naming ``addrs`` (ELF addresses of ``binary``) twice: sample 2n holds the
    address as its leaf, sample 2n+1 as a caller's frame (below an unmapped leaf)."""
    segs, pie = load_segments(binary)
    base = PIE_BASE if pie else 0
    f = Synth(attrs=[make_attr(defer=False)])
    f.raw(C.PERF_RECORD_COMM, struct.pack("<ii", PID, PID) + _pad(comm.encode()) + f.trailer(PID, 1),
          misc=C.PERF_RECORD_MISC_COMM_EXEC)
    for vaddr, memsz, off in segs:
        start = base + (vaddr & ~0xfff)
        length = (vaddr + memsz - (vaddr & ~0xfff) + 0xfff) & ~0xfff
        f.raw(C.PERF_RECORD_MMAP, struct.pack("<iiQQQ", PID, PID, start, length, off & ~0xfff)
              + _pad(str(binary).encode()) + f.trailer(PID, 2), misc=C.PERF_RECORD_MISC_USER)
    for n, a in enumerate(addrs):
        ip = base + a
        f.sample(tid=PID, pid=PID, time=(1000 + 2 * n) * 1000, user=[ip], user_mode=True, ip=ip)
        f.sample(tid=PID, pid=PID, time=(1001 + 2 * n) * 1000, user=[OTHER, ip], user_mode=True, ip=OTHER)
    f.save(path)


def script_chains(text, addrs):
    """{(addr, position): [(sym, dso)]} from ``-F tid,time,ip,sym,dso`` text of that file (perf's
    or ours): position 0, the leaf's frames; 1, the caller's (the unmapped leaf left out)."""
    out = {}
    cur = None
    for line in text.split("\n"):
        if not line.strip():
            continue
        if not line.startswith("\t"):
            n = int(round(float(TIME.search(line).group(1)) * 1e6)) - 1000
            cur = out[(addrs[n // 2], n % 2)] = []
            continue
        ip, rest = line.strip().split(" ", 1)
        sym, _, dso = rest.rpartition(" (")
        if int(ip, 16) != OTHER:
            cur.append((OFFSET.sub("", sym), dso[:-1]))
    return out
