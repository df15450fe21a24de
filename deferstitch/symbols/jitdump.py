"""jit-PID.dump — the jitdump file a runtime writes for perf (CPython -X perf_jit, the JVM's
libperf-jvmti.so, V8 --perf-prof), read directly: names with the time they became valid.

The runtime mmaps the dump (PROT_EXEC) as a marker, so the recording holds a MMAP2 whose file
name ends in ``/jit-PID.dump`` with PID the mapping process (util/jitdump.c, jit_detect). perf's
way is ``perf inject --jit``: it writes an ELF file per JIT_CODE_LOAD and a MMAP2 at its time,
and drops every PERF_RECORD_CALLCHAIN_DEFERRED on the way (it needs ``perf record -k 1`` so that
the dump's CLOCK_MONOTONIC times and the samples' compare). Layout (util/jitdump.h), in the
writer's byte order (magic "JiTD" read as 0x4A695444)::

    struct jitheader { u32 magic, version, total_size, elf_mach, pad1, pid; u64 timestamp, flags; }
    struct jr_prefix { u32 id, total_size; u64 timestamp; }         then, by id:
      0 JIT_CODE_LOAD       u32 pid, tid; u64 vma, code_addr, code_size, code_index;
                            char name[]; u8 code[code_size]
      1 JIT_CODE_MOVE       u32 pid, tid; u64 vma, old_code_addr, new_code_addr, code_size,
                            code_index
      2 JIT_CODE_DEBUG_INFO u64 code_addr, nr_entry; entries {u64 addr; s32 lineno, discrim;
                            char name[]}
      3 JIT_CODE_CLOSE      (nothing: the runtime stopped writing)
      4 JIT_CODE_UNWINDING_INFO  u64 unwinding_size, eh_frame_hdr_size, mapped_size; u8 data[]

Only LOAD and MOVE name code; DEBUG_INFO (source lines) and UNWINDING_INFO (.eh_frame) are
skipped by their size, as are ids this reader does not know. A MOVE names its new place after the
LOAD of the same code_index; the old place keeps its name until other code is put there (perf's
injected MMAP2s behave so). A dump cut short (the runtime was killed while writing) or damaged
stops at that record: ``error`` says where, what came before is used.
"""
import mmap
import os
import re
import struct
from collections import namedtuple

from .perfmap import open_regular

JITHEADER_MAGIC = 0x4A695444
JITDUMP_FLAGS_ARCH_TIMESTAMP = 1
JIT_CODE_LOAD, JIT_CODE_MOVE, JIT_CODE_DEBUG_INFO, JIT_CODE_CLOSE, JIT_CODE_UNWINDING_INFO = range(5)
HEADER_SIZE, PREFIX_SIZE = 40, 16
_MARKER = re.compile(r"jit-(\d+)\.dump\Z")

# One piece of named code: [start, end) holds ``name`` from ``time`` on (the dump's clock).
Code = namedtuple("Code", "time start end name index")


def marker_pid(filename):
    """The PID of a mapped ``.../jit-PID.dump`` marker, or None for any other file."""
    if not filename.endswith(".dump"):
        return None
    m = _MARKER.match(os.path.basename(filename))
    return int(m.group(1)) if m else None


class JitDump:
    """A dump's header and code, read at once: ``codes`` in file order, ``error`` (None, or
    "FILE: offset 0x..: what") when it stopped early."""

    def __init__(self, path):
        self.path = path
        self.codes = []
        self.error = None
        self.pid = self.flags = self.timestamp = None
        self.records = {}           # id -> records read
        with open_regular(path) as f:       # OSError for a FIFO, a device, a directory
            st = os.fstat(f.fileno())
            if st.st_size == 0:
                self._parse(b"")
                return
            # mapped, not read: only the records' headers and names are touched, never the
            # code bytes that make a JVM's dump hundreds of MB
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                self._parse(data)

    @property
    def arch_timestamps(self):
        return bool(self.flags and self.flags & JITDUMP_FLAGS_ARCH_TIMESTAMP)

    def _stop(self, offset, what):
        self.error = "%s: offset %#x: %s" % (self.path, offset, what)

    def _parse(self, data):
        if len(data) < HEADER_SIZE:
            return self._stop(0, "not a jitdump: %d bytes, the header has %d" % (len(data), HEADER_SIZE))
        for e in "<>":
            if struct.unpack_from(e + "I", data)[0] == JITHEADER_MAGIC:
                break
        else:
            return self._stop(0, "not a jitdump: magic %#010x" % struct.unpack_from("<I", data)[0])
        _m, _v, total, _mach, _pad, self.pid, self.timestamp, self.flags = \
            struct.unpack_from(e + "IIIIIIQQ", data)
        if total < HEADER_SIZE or total > len(data):
            return self._stop(8, "header total_size %d (file of %d bytes)" % (total, len(data)))
        by_index = {}
        pos = total
        while pos < len(data):
            if pos + PREFIX_SIZE > len(data):
                return self._stop(pos, "record header cut short (%d of %d bytes)"
                                  % (len(data) - pos, PREFIX_SIZE))
            rid, size, t = struct.unpack_from(e + "IIQ", data, pos)
            if size < PREFIX_SIZE:
                return self._stop(pos, "record id %d: total_size %d is below its header's %d"
                                  % (rid, size, PREFIX_SIZE))
            if pos + size > len(data):
                return self._stop(pos, "record id %d: total_size %d, only %d bytes left"
                                  % (rid, size, len(data) - pos))
            body = pos + PREFIX_SIZE
            if rid == JIT_CODE_LOAD:
                if size < PREFIX_SIZE + 40:
                    return self._stop(pos, "JIT_CODE_LOAD of %d bytes, below its 56" % size)
                _pid, _tid, _vma, addr, csize, index = struct.unpack_from(e + "IIQQQQ", data, body)
                nul = data.find(b"\0", body + 40, pos + size)
                if nul < 0 or nul + 1 + csize > pos + size:
                    return self._stop(pos, "JIT_CODE_LOAD: name and %d bytes of code overrun its "
                                      "total_size %d" % (csize, size))
                name = data[body + 40:nul].decode("utf-8", "replace")
                by_index[index] = name
                self.codes.append(Code(t, addr, addr + csize, name, index))
            elif rid == JIT_CODE_MOVE:
                if size < PREFIX_SIZE + 48:
                    return self._stop(pos, "JIT_CODE_MOVE of %d bytes, below its 64" % size)
                _pid, _tid, _vma, _old, new, csize, index = struct.unpack_from(e + "IIQQQQQ", data, body)
                name = by_index.get(index)
                if name is not None:
                    self.codes.append(Code(t, new, new + csize, name, index))
            elif rid == JIT_CODE_CLOSE:
                self.records[rid] = self.records.get(rid, 0) + 1
                break
            self.records[rid] = self.records.get(rid, 0) + 1
            pos += size
