"""The ring-buffer pages of a trace.dat buffer read by us (deferstitch/_tracedat.c, or its twin
walk.py), every page checked before anything reads it.

    walker(handle)  a Walker over the handle's CPUs: its records in time order, as trace-cmd
                    report gives them, or None where the buffer holds no CPU data
    scan(handle)    each CPU walked alone to its end: its good records and its damage (the tests
                    hold the C walker's to walk.py's with it)

A CPU's damage is raised when its next record is taken up, right after its last good one was
handed out (bridge.Trace reports what came before).

Compressed CPU data (trace-cmd v7, zstd or zlib) is walked over its chunk table
(headers.flyrecord), one chunk decompressed at a time, its offsets counting the decompressed
data from where libtracecmd puts each CPU's (handle.extents), so that records carry the offsets
`trace-cmd report` gives them.
"""
import os

from .. import inflate
from ..errors import FormatError
from . import walk

try:
    from .. import _tracedat
except ImportError:         # no compiler at install: walk.py reads the pages
    _tracedat = None


if _tracedat is not None and not hasattr(_tracedat, "codecs"):
    _tracedat = None        # built from older sources (a stale in-place build): not this one's
if _tracedat is not None:
    _tracedat.codecs(*inflate.c_codecs())


MAX_PAGES_HELD = 1 << 30     # bytes: one page of every CPU is held while their records merge


def available():
    return _tracedat is not None


def accel_allowed():
    """DEFERSTITCH_ACCEL=0 keeps walk.py reading the pages (the definition); =require is
    allowed, and engine.feed makes a run the C path cannot take an error."""
    return os.environ.get("DEFERSTITCH_ACCEL") != "0"


def walker(handle, cpu_ids=None, python=False, clock=None):
    """A Walker over the handle's CPU data, or None where it holds none: the C one, or with
    ``python`` its twin in walk.py (where the C module is not built or not allowed, or times
    are shifted: ``clock(ts, cpu)``, clock.py)."""
    if clock is not None and not python:
        raise ValueError("only walk.py's walker shifts times")
    if (_tracedat is None and not python) or not _readable(handle):
        return None
    cpus, compression = _layout(handle, use_c=not python)
    cpus = [((cpu_ids or {}).get(c[0], c[0]),) + tuple(c[1:]) for c in cpus]
    if python:
        return walk.Walker(handle.fd, handle.file_size, handle.page_size, handle.long_size,
                           handle.big_endian, handle.common_layout, cpus, compression, clock)
    return _tracedat.Walker(handle.fd, handle.file_size, handle.page_size, handle.long_size,
                            handle.big_endian, handle.common_layout, cpus, compression)


def is_c_walker(w):
    """w is the C module's Walker (the C feed reads it), not walk.py's."""
    return _tracedat is not None and isinstance(w, _tracedat.Walker)


def can_decompress(name):
    """The C walker can decompress CPU data of that compression here (its library loads)."""
    return _tracedat is not None and bool(_tracedat.decompressor(name))


def _decompressor(name, use_c):
    """The C walker (use_c) or walk.py can decompress data of that compression here."""
    return _tracedat.decompressor(name) if use_c else walk.decompressor(name)


def _layout(handle, use_c):
    """(cpus, compression) as the walkers take them: [(index, first, size)] of file offsets, or
    for compressed data [(index, first, size, chunks, tail)], first where libtracecmd counts that
    CPU's decompressed data from, chunks and tail from its chunk table (headers.flyrecord). Data
    we cannot walk (no decompressor here, a chunk table that does not cover the data trace-cmd
    reads) is a FormatError, never a buffer read as empty."""
    if handle.compression is None:
        return [(i, first, size) for i, (first, size) in sorted(handle.extents.items())], None
    fly, name = getattr(handle, "flyrecord", None), handle.compression
    if not _decompressor(name, use_c):
        raise FormatError(handle.path, None, "its data is compressed with %s, and no %s "
                          "library or module is here to read it" % (name, name))
    listed = fly.cpus if fly is not None and fly.compression == name else []
    out = []
    for i, (first, size) in sorted(handle.extents.items()):
        c = listed[i] if i < len(listed) else None
        total = None if c is None or c.chunks is None else sum(n for _o, _z, n in c.chunks)
        if total is None or (c.damage is None and total != size):
            raise FormatError(handle.path, None, "CPU index %d's compressed data has no chunk "
                              "table that covers it: not a layout trace-cmd writes" % i)
        tail = None if c.damage is None else (first + total, c.damage[1])
        out.append((i, first, size, c.chunks, tail))
    return out, name


def _readable(handle):
    """The handle's CPU data can be walked by us (with CPUs), its header checked: False, True,
    or FormatError where no page can be read."""
    if not handle.extents:
        return False
    if handle.long_size not in (4, 8) or not 32 <= handle.page_size <= 1 << 26:
        raise FormatError(handle.path, _header_offset(handle.path), "the file's header gives a "
                          "long size of %d and pages of %d bytes: not a ring buffer we can read"
                          % (handle.long_size, handle.page_size))
    if len(handle.extents) * handle.page_size > MAX_PAGES_HELD:
        raise FormatError(handle.path, _header_offset(handle.path), "%d CPUs of %d-byte pages: "
                          "more than %d MiB to hold one page of each: not a trace we can read"
                          % (len(handle.extents), handle.page_size, MAX_PAGES_HELD >> 20))
    return True


def _header_offset(path):
    """Where the long size byte is (trace-cmd.dat(5): magic, "tracing", the version string, its
    NUL, the endian byte, then long size and page size)."""
    with open(path, "rb") as f:
        head = f.read(64)
    end = head.find(b"\0", 10)
    return end + 2 if end >= 0 else 0


def scan(handle, use_c=None):
    """Each CPU of the handle walked alone to its end: [(cpu index, good records, damage or
    None, first record (ts, offset) or None)], by the C walker (use_c True, or None: when built
    and allowed) or its Python twin (walk.py, the definition); None where it holds no CPU data."""
    if not _readable(handle):
        return None
    if use_c is None:
        use_c = _tracedat is not None and accel_allowed() and (
            handle.compression is None or _decompressor(handle.compression, True))
    if use_c:
        w = walker(handle)
        return None if w is None else w.scan()
    cpus, compression = _layout(handle, use_c=False)
    return walk.scan(handle.fd, handle.file_size, handle.page_size, handle.long_size,
                     handle.big_endian, handle.common_layout[4], cpus, compression)


class WalkedBuffer:
    """The reading of a buffer whose pages our walker reads: its records, its peek at a CPU's
    next record, the count and the errors, as bridge.Trace and the C feed (engine.py) take them
    from a buffer (ownfile.OwnBuffer). The buffer holds ``path``, ``fd``, ``file_size``, ``compression``,
    ``records``, ``_walk`` (the Walker, or None) and ``_ids`` ({cpu index: the CPU number its
    records carry})."""

    def peek(self, cpu):
        """(ts, missed_events) of the next record on cpu, not consumed; None at its end."""
        return self._walk.peek(self._ids.get(cpu, cpu))

    def next_record(self):
        """The next record in time order across CPUs: (ts, cpu, missed_events, type, pid, data
        offset, payload bytes), or None at the end; the first damage as a FormatError."""
        try:
            r = self._walk.next()
        except DAMAGED as err:
            raise self.walked(err) from None
        if r is not None:
            self.records += 1
        return r

    def iter_records(self):
        """next_record() to the end, as a generator: the walker's C iterator."""
        try:
            yield from self._walk
        except DAMAGED as err:
            raise self.walked(err) from None
        self.walked()

    @property
    def walker(self):
        """Our page reader's walker over this buffer (walker()), or None: it holds no CPU data."""
        return self._walk

    def walker_cpus(self):
        """The CPU number the records of each of the walker's CPUs carry, by its index."""
        return [self._ids.get(i, i) for i in range(self.cpus)]

    def walked(self, damaged=None):
        """The walker went through this buffer elsewhere (the C feed, tracecmd/engine.py): its
        count taken, and for ``damaged`` (Damaged) the error iter_records would raise."""
        self.records = self._walk.records
        if damaged is not None:
            self._unchanged()
            return self._damaged(*damaged.args)
        return None

    def _damaged(self, cpu, offset, why):
        return self.error(offset, "CPU %d: %s: damaged ring-buffer page (%d records read before "
                          "it)" % (cpu, why, self.records))

    def error(self, offset, message):
        """A FormatError at a record's data offset: a file offset, except in a compressed file,
        where offsets count the decompressed data (then the offset goes in the text)."""
        if self.compression is None:
            return FormatError(self.path, offset, message)
        return FormatError(self.path, None, "offset %#x of the %s-decompressed data: %s"
                           % (offset, self.compression, message))

    def _unchanged(self):
        """The file has not shrunk since it was opened: damage met after a cut is the cut's
        (said so, with the new size), not the pages'."""
        size = os.fstat(self.fd).st_size
        if size < self.file_size:
            raise FormatError(self.path, size, "the file was cut from %d to %d bytes while it was "
                              "read: incomplete, stopped after %d records"
                              % (self.file_size, size, self.records))


Damaged = _tracedat.Damaged if _tracedat is not None else None
DAMAGED = (walk.Damaged,) + ((Damaged,) if Damaged is not None else ())    # either walker's
Feed = getattr(_tracedat, "Feed", None)         # the C feed (_tracefeed.c): tracecmd/engine.py
# formats.Kallsyms' C twin (_kallsyms.c): ownfile.OwnFile.function
Kallsyms = getattr(_tracedat, "Kallsyms", None)
