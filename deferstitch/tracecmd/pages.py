"""The ring-buffer pages of a trace.dat buffer read by us (deferstitch/_tracedat.c), every page
checked before anything reads it.

    walker(handle)  a _tracedat.Walker over the handle's CPUs: its records in time order, as
                    libtracecmd gives them, or None (compressed data, the module not built)
    plan(handle)    the walk of every CPU alone to its end, before libtracecmd reads a page:
                    {cpu index: Budget(records, damage)}; libtracecmd is then asked for no more
                    than `records` of that CPU, so it never loads a page we found damaged

Both readers stop at the same point: a CPU's damage is raised when its next record is taken
up, right after its last good one was handed out (bridge.Trace reports what came before).
"""
import os

from ..errors import FormatError

try:
    from .. import _tracedat
except ImportError:         # no compiler at install: libtracecmd reads the pages, unchecked
    _tracedat = None


MAX_PAGES_HELD = 1 << 30     # bytes: one page of every CPU is held while their records merge


class Budget:
    """What the walk found on one CPU: good records, then damage (offset, why) or None."""

    __slots__ = ("cpu", "records", "damage", "first")

    def __init__(self, cpu, records, damage, first):
        self.cpu, self.records, self.damage, self.first = cpu, records, damage, first


def available():
    return _tracedat is not None


def accel_allowed():
    """DEFERSTITCH_ACCEL=0 keeps libtracecmd reading the pages (the definition)."""
    return os.environ.get("DEFERSTITCH_ACCEL") != "0"


def walker(handle, cpu_ids=None):
    """A Walker over the handle's CPU data (file offsets), or None where we cannot read it."""
    if _tracedat is None or handle.compression is not None or not handle.extents:
        return None
    if handle.long_size not in (4, 8) or not 32 <= handle.page_size <= 1 << 26:
        raise FormatError(handle.path, _header_offset(handle.path), "the file's header gives a "
                          "long size of %d and pages of %d bytes: not a ring buffer we can read"
                          % (handle.long_size, handle.page_size))
    if len(handle.extents) * handle.page_size > MAX_PAGES_HELD:
        raise FormatError(handle.path, _header_offset(handle.path), "%d CPUs of %d-byte pages: "
                          "more than %d MiB to hold one page of each: not a trace we can read"
                          % (len(handle.extents), handle.page_size, MAX_PAGES_HELD >> 20))
    cpus = [((cpu_ids or {}).get(i, i), first, size)
            for i, (first, size) in sorted(handle.extents.items())]
    return _tracedat.Walker(handle.fd, handle.file_size, handle.page_size, handle.long_size,
                            handle.big_endian, handle.common_layout, cpus)


def _header_offset(path):
    """Where the long size byte is (trace-cmd.dat(5): magic, "tracing", the version string, its
    NUL, the endian byte, then long size and page size)."""
    with open(path, "rb") as f:
        head = f.read(64)
    end = head.find(b"\0", 10)
    return end + 2 if end >= 0 else 0


def plan(handle):
    """{cpu index: Budget} from one walk of each CPU alone, or None (walker() gave none)."""
    w = walker(handle)
    if w is None:
        return None
    indexes = sorted(handle.extents)
    return {i: Budget(i, n, damage, first)
            for i, (_id, n, damage, first) in zip(indexes, w.scan())}


Damaged = _tracedat.Damaged if _tracedat is not None else None
Feed = getattr(_tracedat, "Feed", None)         # the C feed (_tracefeed.c): tracecmd/engine.py
