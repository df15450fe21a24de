"""The ring-buffer pages of a trace.dat buffer read by us (deferstitch/_tracedat.c), every page
checked before anything reads it.

    walker(handle)  a _tracedat.Walker over the handle's CPUs: its records in time order, as
                    libtracecmd gives them, or None (the module not built, compressed data whose
                    chunk table is not ours or whose library is not here)
    plan(handle)    the walk of every CPU alone to its end, before libtracecmd reads a page:
                    {cpu index: Budget(records, damage)}; libtracecmd is then asked for no more
                    than `records` of that CPU, so it never loads a page we found damaged. The
                    C walker's scan where it is built and allowed, else its Python twin (walk.py,
                    the definition the C one is held to): checked on both paths

Both readers stop at the same point: a CPU's damage is raised when its next record is taken
up, right after its last good one was handed out (bridge.Trace reports what came before).

Compressed CPU data (trace-cmd v7, zstd or zlib) is walked over its chunk table
(headers.flyrecord), one chunk decompressed at a time, its offsets counting the decompressed
data from where libtracecmd puts each CPU's (handle.extents), so that records carry the offsets
libtracecmd gives them.
"""
import os

from .. import inflate
from ..errors import FormatError
from . import walk

try:
    from .. import _tracedat
except ImportError:         # no compiler at install: walk.py checks the pages for libtracecmd
    _tracedat = None


if _tracedat is not None and not hasattr(_tracedat, "codecs"):
    _tracedat = None        # built from older sources (a stale in-place build): not this one's
if _tracedat is not None:
    _tracedat.codecs(*inflate.c_codecs())


MAX_PAGES_HELD = 1 << 30     # bytes: one page of every CPU is held while their records merge


class Budget:
    """What the walk found on one CPU: good records, then damage (offset, why) or None."""

    __slots__ = ("cpu", "records", "damage", "first")

    def __init__(self, cpu, records, damage, first):
        self.cpu, self.records, self.damage, self.first = cpu, records, damage, first


def available():
    return _tracedat is not None


def accel_allowed():
    """DEFERSTITCH_ACCEL=0 keeps libtracecmd reading the pages (the definition); =require
    is allowed, and engine.feed makes a run the C path cannot take an error."""
    return os.environ.get("DEFERSTITCH_ACCEL") != "0"


def walker(handle, cpu_ids=None, python=False):
    """A Walker over the handle's CPU data, or None where we cannot read it: the C one, or
    with ``python`` its twin in walk.py (slower: for where neither the C module nor
    libtracecmd reads the file)."""
    if (_tracedat is None and not python) or not _readable(handle):
        return None
    got = _layout(handle, use_c=not python)
    if got is None:
        return None
    cpus, compression = got
    cpus = [((cpu_ids or {}).get(c[0], c[0]),) + tuple(c[1:]) for c in cpus]
    make = walk.Walker if python else _tracedat.Walker
    return make(handle.fd, handle.file_size, handle.page_size, handle.long_size,
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
    CPU's decompressed data from, chunks and tail from its chunk table (headers.flyrecord); None
    where the data is not ours to walk: no table of ours (a v6 layout, an options section we
    cannot decompress), one that libtracecmd counts otherwise, or no decompressor here."""
    if handle.compression is None:
        return [(i, first, size) for i, (first, size) in sorted(handle.extents.items())], None
    fly, name = getattr(handle, "flyrecord", None), handle.compression
    if fly is None or fly.compression != name or not _decompressor(name, use_c):
        return None
    listed = fly.cpus or []             # by index, as libtracecmd's cpu_data (the option's order)
    out = []
    for i, (first, size) in sorted(handle.extents.items()):
        c = listed[i] if i < len(listed) else None
        if c is None or c.chunks is None:
            return None
        total = sum(length for _off, _zsize, length in c.chunks)
        if c.damage is None and total != size:
            return None                 # libtracecmd reads another table than ours
        tail = None if c.damage is None else (first + total, c.damage[1])
        out.append((i, first, size, c.chunks, tail))
    if any(c.chunks and any(length for _o, _z, length in c.chunks)
           for i, c in enumerate(listed) if i not in handle.extents):
        return None                     # data libtracecmd does not show
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
    and allowed) or its Python twin (walk.py, the definition); None where the data is not ours
    to walk (no CPUs, compressed data _layout() leaves to libtracecmd)."""
    if not _readable(handle):
        return None
    if use_c is None:
        use_c = _tracedat is not None and accel_allowed() and (
            handle.compression is None or _decompressor(handle.compression, True))
    if use_c:
        w = walker(handle)
        return None if w is None else w.scan()
    got = _layout(handle, use_c=False)
    if got is None:
        return None
    cpus, compression = got
    return walk.scan(handle.fd, handle.file_size, handle.page_size, handle.long_size,
                     handle.big_endian, handle.common_layout[4], cpus, compression)


def plan(handle):
    """{cpu index: Budget} from one walk of each CPU alone (scan()), or None (no CPUs, data
    left to libtracecmd): the C walker where it is built and allowed, else the Python one, so that
    libtracecmd is handed no page found damaged on either path."""
    got = scan(handle)
    if got is None:
        return None
    indexes = sorted(handle.extents)
    return {i: Budget(i, n, damage, first)
            for i, (_id, n, damage, first) in zip(indexes, got)}


class WalkedBuffer:
    """The reading of a buffer whose pages our walker reads: its records, its peek at a CPU's
    next record, the count and the errors, as bridge.Trace and the C feed (engine.py) take them
    from a buffer handle: libtracecmd's (_ffi.Handle, where the walker agrees with it) or our own
    (ownfile.OwnBuffer). The handle holds ``path``, ``fd``, ``file_size``, ``compression``,
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
        """Our page reader's walker over this buffer (walker()), or None: libtracecmd reads."""
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
        """The file has not shrunk since it was opened: a page past the new end would be a
        short read (ours), SIGBUS (libtracecmd maps an uncompressed file's pages) or a silent
        end of data (its compressed ones). Checked before each record where libtracecmd reads an
        uncompressed file (a cut takes away the page being read too), else before going on after
        a record that began a new page, as an fstat costs a quarter of the read time. A cut
        made between the check and the read can still win."""
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
