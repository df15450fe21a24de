"""Read a perf.data (file or pipe mode, either endianness, compressed or not) as a record stream.

    reader = PerfData.open("perf.data")       # header, attrs and (file mode) features read now
    for rec in reader.records():              # file order, incrementally; never the whole file
        ...                                   # rec.type, rec.misc, rec.data (header included)

Records are raw bytes first and parsed on request (``reader.evlist`` knows each one's attr).
Damage raises FormatError naming the file and offset after every good record before it was
yielded; unknown record types are passed through, never fatal.
"""
import contextlib
import io
import os
import struct
import sys

from .. import inflate
from ..abi import consts as C
from ..abi import records as R
from ..abi.attr import PerfEventAttr
from ..errors import FormatError
from . import features as F
from . import tracing_data
from .auxtrace import AuxTrace
from .evlist import Evlist
from .header import (HEADER_SIZE, HEADER_SIZE_NO_FEATURES, MAGIC_V1, PIPE_HEADER_SIZE, endian_of,
                     legacy_endian, parse_header)

CHUNK = 1 << 20
MAX_HEAD = 64 << 20       # attrs + ids before the data section: far more than any real file has
MAX_READ = 64 << 20       # one read() at most, whatever length a record claims
MAX_AHEAD = 64 << 20      # what ahead() keeps of a pipe at most


# Record types that carry metadata (PerfData.note reads them as they pass).
_NOTE_TYPES = frozenset((C.PERF_RECORD_HEADER_ATTR, C.PERF_RECORD_ID_INDEX,
                         C.PERF_RECORD_HEADER_FEATURE, C.PERF_RECORD_EVENT_UPDATE,
                         C.PERF_RECORD_HEADER_TRACING_DATA,    # (the C engine hands this one back)
                         C.PERF_RECORD_AUXTRACE_INFO, C.PERF_RECORD_AUXTRACE))   # counted: auxtrace.py


class Record:
    """One record: its type, misc, bytes (header included) and the file offset it came from.

    ``extra`` holds bytes that follow the record outside header.size (AUXTRACE payload,
    HEADER_TRACING_DATA); ``inner`` is set for records decompressed from a COMPRESSED container.
    """

    __slots__ = ("type", "misc", "data", "offset", "extra", "inner")

    def __init__(self, rtype, misc, data, offset, extra=b"", inner=False):
        self.type, self.misc, self.data, self.offset = rtype, misc, data, offset
        self.extra, self.inner = extra, inner

    def __repr__(self):
        return "Record(%s, size=%d, offset=%#x)" % (C.record_name(self.type), len(self.data), self.offset)


class Stream:
    """Forward-only buffered reads with the absolute offset kept; seeks when the file allows.
    ``buf[bpos:]`` is what is read and not yet taken, at file offset ``pos``: the C engine's
    driver (perfdata/engine.py) feeds the engine straight from it."""

    def __init__(self, f, path):
        self.f, self.path = f, path
        self.buf, self.bpos, self.base = b"", 0, 0   # buf[0] is at file offset ``base``
        self.kept = None             # keep(): the bytes taken since, for rewind() (a pipe)
        self.kept_from = self.mark = 0
        try:
            self.seekable = f.seekable()
        except (AttributeError, OSError):
            self.seekable = False
        self.size = None             # known for a regular file: offsets past it are damage
        if self.seekable:
            try:
                self.size = os.fstat(f.fileno()).st_size
            except (AttributeError, OSError, io.UnsupportedOperation):
                pass

    @property
    def pos(self):
        return self.base + self.bpos

    def fill(self, n):
        """Make n bytes available at bpos; fewer only at EOF. A record cut by the buffer's end
        is completed by reading its rest only: the next read (a CHUNK) then becomes the buffer
        as it is, with no join copying it (one copy of the whole input less)."""
        have = len(self.buf) - self.bpos
        if have >= n:
            return True
        parts = [self.buf[self.bpos:]] if have else []
        if self.kept is not None:       # kept for rewind(), without joining them again
            self.kept.append(self.buf[self.kept_from:self.bpos])
            self.kept_from = 0
        while have < n:
            # bounded reads: a damaged length must not become one huge allocation
            chunk = self.f.read(min(n - have if parts else max(n, CHUNK), MAX_READ))
            if not chunk:
                break
            parts.append(chunk)
            have += len(chunk)
        self.base += self.bpos
        self.buf, self.bpos = b"".join(parts), 0
        return have >= n

    def keep(self):
        """Read on from here, then rewind() to here: a file seeks back, a pipe keeps the bytes."""
        self.mark = self.pos
        if not self.seekable:
            self.kept, self.kept_from = [], self.bpos

    def kept_bytes(self):
        return self.pos - self.mark

    def rewind(self):
        """Back to where keep() was called: what was read since is read again."""
        if self.kept is None:
            self.goto(self.mark, "the records read ahead")
            return
        self.kept.append(self.buf[self.kept_from:])
        self.buf, self.bpos, self.base = b"".join(self.kept), 0, self.mark
        self.kept = None

    def read(self, n, what):
        at = self.pos
        if self.size is not None and at + n > self.size:     # known too short: do not read it
            left = max(self.size - at, 0)
        elif not self.fill(n):
            left = len(self.buf) - self.bpos
        else:
            left = None
        if left is not None:
            raise FormatError(self.path, at, "truncated %s: need %d bytes, file ends after %d"
                              % (what, n, left))
        out = self.buf[self.bpos:self.bpos + n]
        self.bpos += n
        return out

    def _past_end(self, offset, what):
        if self.size is not None and offset > self.size:
            raise FormatError(self.path, offset, "%s lies past the end of the file (%d bytes)"
                              % (what, self.size))

    def goto(self, offset, what):
        self._past_end(offset, what)
        if offset >= self.pos:
            self.skip(offset - self.pos, what)
        elif self.seekable:
            self.f.seek(offset)
            self.buf, self.bpos, self.base = b"", 0, offset
        else:
            raise FormatError(self.path, offset, "%s lies before the current position of a pipe" % what)

    def skip(self, n, what):
        have = len(self.buf) - self.bpos
        if n <= have:
            self.bpos += n
            return
        if self.seekable:
            target = self.pos + n
            self._past_end(target, what)
            self.f.seek(target)
            self.buf, self.bpos, self.base = b"", 0, target
            return
        while n > 0:
            step = min(n, CHUNK)
            self.read(step, what)
            n -= step


class PerfData:
    """A perf.data being read: metadata now, records on demand (see the module docstring)."""

    def __init__(self, f, path="perf.data"):
        self.path = path
        self.stream = Stream(f, path)
        self._f = f
        head = self.stream.read(8, "magic") if self.stream.fill(8) else None
        if head is None:
            raise FormatError(path, 0, "empty file, not a perf.data")
        e = endian_of(head)
        raw_size = self.stream.read(8, "header size") if e is not None or head == MAGIC_V1 else None
        self.version = 2
        if e is None and raw_size is not None:       # "PERFFILE": the order is in the sizes
            self.version = 1
            s = self.stream
            e = legacy_endian(raw_size, bytes(s.buf[s.bpos:s.bpos + 8]) if s.fill(8) else None)
            if e is None:
                raise FormatError(path, 8, "legacy perf.data header (PERFFILE) whose sizes fit "
                                  "no known attr size in either byte order")
        if e is None:
            raise FormatError(path, 0, "not a perf.data file (magic %r)" % bytes(head))
        self.endian = e
        size = struct.unpack(e + "Q", raw_size)[0]
        self.pipe = size == PIPE_HEADER_SIZE
        self.evlist = Evlist(e)
        self.features = {}            # feature bit -> raw payload bytes
        self.tracing = None           # the tracepoint formats (tracing_data.py): feature or record
        self.header = None
        self.feature_error = None     # damaged feature sections (file mode), reported at the end
        self.warning = None           # the header does not cover the records (see _data_bounds)
        self.features_end = None      # the id of a pipe's end-of-features mark, when seen
        self.auxtrace = AuxTrace()    # the AUX area trace the records carry (not decoded)
        self.layouts_ahead = {}       # feed.layout_ahead's answers, by how far it read
        if self.pipe:
            self.data_start, self.data_end = PIPE_HEADER_SIZE, None
            return
        if size not in (HEADER_SIZE, HEADER_SIZE_NO_FEATURES):
            raise FormatError(path, 8, "header size %d is neither %d (file) nor %d (pipe)"
                              % (size, HEADER_SIZE, PIPE_HEADER_SIZE))
        rest = self.stream.read(size - 16, "file header")
        self.header = h = parse_header((head + raw_size + rest).ljust(HEADER_SIZE, b"\0"), e)
        self.data_start, self.data_end = h.data.offset, h.data.offset + h.data.size
        if h.attr_size < 16 + 64 or h.attr_size > 4096 or h.attrs.size % h.attr_size:
            raise FormatError(path, 16, "attr_size %d does not fit an attrs section of %d bytes"
                              % (h.attr_size, h.attrs.size))
        if h.data.offset < size:
            raise FormatError(path, 40, "data section at %#x overlaps the header" % h.data.offset)
        self._read_attrs(h)
        if self.stream.seekable:
            try:
                self._read_features(h)
            except FormatError as err:      # a cut file: its records still count, the
                self.feature_error = err    # damage is reported where the records end
        self._data_bounds(h)
        if self.stream.seekable:
            self.stream.goto(self.data_start, "data section")

    def _data_bounds(self, h):
        """Where the records end when the header does not say it: perf record writes data.size
        and the features after the data only when it stops, so a file it is still writing, or
        that it never finished, says 0 (perf 7.2 then warns and reads nothing). When nothing
        the header describes lies past the data (attrs, ids, or a feature table that reads),
        a data.size of 0, or one that ends before the file does, gets a warning and the
        records are read to the end of the file, as for a pipe."""
        if self._meta_after_data or (h.features and self.stream.seekable and self.feature_error is None):
            return                      # a finished file: what follows the data is described
        size = self.stream.size
        if h.data.size == 0:
            self.warning = ("the header's data.size is 0 (perf record still writing, or killed): "
                            "reading the records to the end of the file")
        elif size is not None and self.data_end < size:
            self.warning = ("the header's data.size (%d bytes) ends %d bytes before the file "
                            "does, %s: reading the records to the end of the file"
                            % (h.data.size, size - self.data_end,
                               "and no feature table follows" if h.features else "with no features"))
        else:
            return
        self.features, self.feature_error = {}, None     # what was read as features was records
        self.data_end = size            # None through a pipe: records until its end

    # -- metadata ------------------------------------------------------------------------------
    @classmethod
    def open(cls, path):
        """Open a path, or '-' for standard input (pipe or file mode): a pipe or socket through
        _Pipe, a file unbuffered (Stream reads a CHUNK at a time itself; a BufferedReader on
        top cost 0.1-0.3 s of sys time on 590 MB)."""
        if path == "-":
            try:
                fd = os.dup(0)
                if _as_pipe(fd):
                    return cls(_Pipe(fd), "<stdin>")
                return cls(os.fdopen(fd, "rb", buffering=0), "<stdin>")
            except OSError as err:          # standard input closed (<&-)
                raise FormatError("standard input", None, err.strerror or str(err)) from None
        try:
            f = open(path, "rb")
        except OSError as err:
            raise FormatError(path, None, err.strerror or str(err)) from None
        return cls(f, path)

    def close(self):
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _blob(self, offset, size, what):
        """Bytes of a metadata region at an absolute offset (before the data on a pipe)."""
        if size > MAX_HEAD:
            raise FormatError(self.path, offset, "%s of %d bytes is implausibly large" % (what, size))
        self.stream.goto(offset, what)
        return self.stream.read(size, what)

    def _read_attrs(self, h):
        e, s = self.endian, self.stream
        entries = []
        n = h.attrs.size // h.attr_size
        if not s.seekable:
            # Forward only: everything before the data section (ids, attrs) in one read.
            if h.data.offset > MAX_HEAD:
                raise FormatError(self.path, 40, "data offset %#x is implausibly large" % h.data.offset)
            base = s.pos
            head = s.read(h.data.offset - base, "attrs and ids")

            def blob(off, size, what):
                if off < base or off + size > h.data.offset:
                    raise FormatError(self.path, off, "%s is outside the part before the data "
                                      "section, which is all a pipe can give" % what)
                return head[off - base:off - base + size]
        else:
            blob = self._blob
        attrs_raw = blob(h.attrs.offset, h.attrs.size, "attrs section")
        for i in range(n):
            off = i * h.attr_size
            asz = h.attr_size - 16
            attr = PerfEventAttr.parse(attrs_raw, off, asz, e)
            ids_off, ids_size = struct.unpack_from(e + "QQ", attrs_raw, off + asz)
            if ids_size % 8:
                raise FormatError(self.path, h.attrs.offset + off + asz, "attr ids size %d is not a "
                                  "multiple of 8" % ids_size)
            entries.append((attr, ids_off, ids_size))
        # attrs and ids after the data (where perf inject and our writer put a pipe input's) fill the tail
        self._meta_after_data = h.attrs.offset >= self.data_end or any(
            off >= self.data_end for _a, off, size in entries if size)
        ids_of = {}
        for i in sorted(range(n), key=lambda i: entries[i][1]):   # forward order for a pipe
            _attr, ids_off, ids_size = entries[i]
            raw = blob(ids_off, ids_size, "attr ids") if ids_size else b""
            ids_of[i] = list(struct.unpack(e + "%dQ" % (ids_size // 8), raw))
        for i, (attr, _off, _size) in enumerate(entries):       # attr order: ID_INDEX idx uses it
            self.evlist.add(attr, ids_of[i])

    def _read_features(self, h):
        if not h.features:
            return
        table_off = self.data_end
        table = self._blob(table_off, 16 * len(h.features), "feature table")
        secs = [struct.unpack_from(self.endian + "QQ", table, 16 * i) for i in range(len(h.features))]
        for bit, (off, size) in zip(h.features, secs):
            self.features[bit] = self._blob(off, size, "feature %s" % C.FEATURE_NAMES.get(bit, bit))
        self._apply_features()

    def _apply_features(self):
        tracing = self.features.get(C.HEADER_TRACING_DATA)
        if tracing:
            self.tracing = tracing
            self.evlist.name_tracepoints(tracing_data.event_names(tracing))
        raw = self.features.get(C.HEADER_EVENT_DESC)
        if raw:
            try:
                desc = F.parse_event_desc(raw, self.endian)
                self.evlist.name_by_position([name for _attr, name, _ids in desc])
            except (struct.error, ValueError):
                pass    # the names are a nicety; the attrs section is authoritative

    def sample_times(self):
        """The recording's first and last sample time, as perf record writes them
        (HEADER_SAMPLE_TIME), or (None, None)."""
        raw = self.features.get(C.FEATURE_IDS["SAMPLE_TIME"])
        if raw is None or len(raw) < 16:
            return None, None
        return struct.unpack_from(self.endian + "QQ", raw)

    def feature(self, bit):
        """A decoded feature (see features.decode), or None."""
        raw = self.features.get(bit)
        if raw is None:
            return None
        try:
            return F.decode(bit, raw, self.endian)
        except (struct.error, ValueError):
            return None

    # -- records -------------------------------------------------------------------------------
    def records(self):
        """Every record in file order; COMPRESSED containers are yielded, then their contents."""
        s, e, path = self.stream, self.endian, self.path
        unpack_hdr = struct.Struct(e + "IHH").unpack_from
        s.goto(self.data_start, "data section")
        end = self.data_end
        decomp = None
        note_types = _NOTE_TYPES
        containers = (C.PERF_RECORD_COMPRESSED, C.PERF_RECORD_COMPRESSED2)
        extra_types = (C.PERF_RECORD_AUXTRACE, C.PERF_RECORD_HEADER_TRACING_DATA)
        note = self.note
        while True:
            # The fast path: the whole record is in the buffer (checks as in the slow path).
            buf, bpos = s.buf, s.bpos
            at = s.base + bpos
            if end is not None and at >= end:
                break
            rec = None
            if len(buf) - bpos >= 8 and (end is None or end - at >= 8):
                rtype, misc, size = unpack_hdr(buf, bpos)
                if 8 <= size <= len(buf) - bpos and (end is None or at + size <= end) \
                        and rtype not in extra_types:
                    s.bpos = bpos + size
                    rec = Record(rtype, misc, buf[bpos:bpos + size], at)
            if rec is None:
                rec = self.slow_record(s, at, end, unpack_hdr)
                if rec is None:
                    break                       # a pipe ends where its last record ends
                rtype = rec.type
            if rtype in note_types:
                note(rec)
            yield rec
            if rtype in containers:
                if decomp is None:
                    decomp = Decompressor(path)
                yield from decomp.feed(self, rec)
        if decomp is not None:
            decomp.finish(end if end is not None else s.pos)
        self.features_after_data()

    @contextlib.contextmanager
    def ahead(self, max_bytes=MAX_AHEAD):
        """The records from the start of the data section, read now and given back: after the
        ``with`` the stream is at the data section's start again (a file seeks back; a pipe's
        bytes are kept in memory, ``max_bytes`` at most: the records then end early) and the
        metadata they carried went into a scratch copy, so the run reads and notes them as if
        they had never been read. For what must be known before the run starts (the deferred
        layout: feed.layout_ahead)."""
        s = self.stream
        s.goto(self.data_start, "data section")
        saved = (self.evlist, self.features, self.features_end, self.feature_error, self.auxtrace)
        self.evlist, self.features, self.auxtrace = self.evlist.copy(), dict(self.features), AuxTrace()
        s.keep()

        def records():
            for rec in self.records():
                yield rec
                if s.kept is not None and s.kept_bytes() > max_bytes:
                    return
        try:
            yield records()
        finally:
            self.evlist, self.features, self.features_end, self.feature_error, self.auxtrace = saved
            s.rewind()

    def features_after_data(self):
        """A file-mode perf.data through a pipe: its features come after the data section."""
        if not self.pipe and not self.stream.seekable and self.header.features and not self.features \
                and self.warning is None:
            try:
                self._read_features(self.header)
            except FormatError as err:
                self.feature_error = err

    def slow_record(self, s, at, end, unpack_hdr):
        """One record the careful way: refills, checks every size, reads the payload that
        follows AUXTRACE and HEADER_TRACING_DATA; None at the clean end of a pipe."""
        path, e = self.path, self.endian
        if end is not None and end - at < 8:
            raise FormatError(path, at, "data section ends inside a record header")
        if not s.fill(8):
            left = len(s.buf) - s.bpos
            if end is None and left == 0:
                return None
            raise FormatError(path, at, "truncated record header (%d bytes left)" % left)
        rtype, misc, size = unpack_hdr(s.buf, s.bpos)
        if size < 8:
            raise FormatError(path, at, "record size %d (type %s) is smaller than its header"
                              % (size, C.record_name(rtype)))
        if end is not None and at + size > end:
            raise FormatError(path, at, "record %s of %d bytes runs past the %s %#x"
                              % (C.record_name(rtype), size, "end of the file" if end == s.size
                                 else "data section end", end))
        data = s.read(size, "record %s of %d bytes" % (C.record_name(rtype), size))
        extra = b""
        if rtype == C.PERF_RECORD_AUXTRACE and size >= 16:
            n = struct.unpack_from(e + "Q", data, 8)[0]
            if end is not None and at + size + n > end:
                raise FormatError(path, at, "AUXTRACE payload of %d bytes runs past the data "
                                  "section end %#x" % (n, end))
            extra = s.read(n, "AUXTRACE payload")
        elif rtype == C.PERF_RECORD_HEADER_TRACING_DATA and size >= 12:
            n = struct.unpack_from(e + "I", data, 8)[0]
            extra = s.read((n + 7) & ~7, "tracing data")
        return Record(rtype, misc, data, at, extra)

    def note(self, rec):
        """Metadata carried by records (pipe mode, and ID_INDEX/EVENT_UPDATE in file mode)."""
        t, e = rec.type, self.endian
        try:
            if t == C.PERF_RECORD_HEADER_ATTR:
                asz = struct.unpack_from(e + "I", rec.data, 12)[0] or 64
                asz = min(asz, len(rec.data) - 8)
                attr = PerfEventAttr.parse(rec.data, 8, asz, e)
                self.evlist.add(attr, R.parse_header_attr_ids(rec.data, e, asz))
            elif t == C.PERF_RECORD_ID_INDEX:
                self.evlist.add_index(R.parse_id_index(rec.data, e))
            elif t == C.PERF_RECORD_HEADER_FEATURE and len(rec.data) == 16:
                # No payload: the end of the features, the mark perf_event__synthesize_features()
                # sends with the writer's HEADER_LAST_FEATURE as id (32 while PMU_CAPS was the
                # last feature; perf 7.x gave 32 to CPU_DOMAIN_INFO). Never a feature: perf
                # sends none it could not write.
                self.features_end = struct.unpack_from(e + "Q", rec.data, 8)[0]
            elif t == C.PERF_RECORD_HEADER_FEATURE and len(rec.data) > 16:
                bit = struct.unpack_from(e + "Q", rec.data, 8)[0]
                self.features[bit] = rec.data[16:]
                if bit == C.HEADER_EVENT_DESC:
                    self._apply_features()
            elif t == C.PERF_RECORD_HEADER_TRACING_DATA:
                self.tracing = rec.extra
                self.evlist.name_tracepoints(tracing_data.event_names(rec.extra))
            elif t in (C.PERF_RECORD_AUXTRACE_INFO, C.PERF_RECORD_AUXTRACE):
                self.auxtrace.note(rec, e)
            elif t == C.PERF_RECORD_EVENT_UPDATE:
                named = R.parse_event_update_name(rec.data, e)
                if named:
                    self.evlist.name_ids([named[0]], named[1])
        except (struct.error, ValueError) as err:
            raise FormatError(self.path, rec.offset, "%s: %s" % (C.record_name(t), err)) from None


def _zstd_backend(path):
    """(new decompressor, its error class) from inflate.zstd_stream, or the FormatError that
    says which package to install."""
    try:
        return inflate.zstd_stream()
    except inflate.NoZstd:
        raise FormatError(path, None, "compressed perf.data needs the zstandard package "
                          "(pip install zstandard, or apt-get install python3-zstandard)") from None


class Decompressor:
    """PERF_RECORD_COMPRESSED(2): one zstd stream for the session; records may straddle chunks.

        struct { header; char data[]; }                        /* COMPRESSED (81), deprecated */
        struct { header; u64 data_size; char data[]; }         /* COMPRESSED2 (83), 8-aligned */
    """

    def __init__(self, path):
        self.new, self.error = _zstd_backend(path)
        self.path = path
        self.obj = self.new()
        self.rest = b""           # a partial record carried over to the next container
        self.rest_offset = None

    def payload(self, reader, rec):
        """The decompressed bytes of one container (records, possibly cut at either end)."""
        e = reader.endian
        if rec.type == C.PERF_RECORD_COMPRESSED2:
            if len(rec.data) < 16:
                raise FormatError(self.path, rec.offset, "COMPRESSED2 record too short")
            n = struct.unpack_from(e + "Q", rec.data, 8)[0]
            if 16 + n > len(rec.data):
                raise FormatError(self.path, rec.offset, "COMPRESSED2 data_size %d exceeds record "
                                  "size %d" % (n, len(rec.data)))
            payload = rec.data[16:16 + n]
        else:
            payload = rec.data[8:]
        out = []
        try:
            while payload:
                out.append(self.obj.decompress(payload))
                payload = self.obj.unused_data if self.obj.eof else b""
                if self.obj.eof:           # perf ends a frame per container: start the next
                    self.obj = self.new()
        except self.error as err:
            raise FormatError(self.path, rec.offset, "bad zstd data in %s: %s"
                              % (C.record_name(rec.type), err)) from None
        return b"".join(out)

    def feed(self, reader, rec):
        e = reader.endian
        buf = self.rest + self.payload(reader, rec)
        hdr = struct.Struct(e + "IHH")
        pos = 0
        while len(buf) - pos >= 8:
            rtype, misc, size = hdr.unpack_from(buf, pos)
            if size < 8:
                raise self.small(rec.offset, rtype, size)
            if len(buf) - pos < size:
                break
            inner = Record(rtype, misc, buf[pos:pos + size], rec.offset, inner=True)
            reader.note(inner)
            yield inner
            pos += size
        self.rest = buf[pos:]
        self.rest_offset = rec.offset

    def small(self, offset, rtype, size):
        """The error for a decompressed record smaller than its header (the C engine's too)."""
        return FormatError(self.path, offset, "decompressed record size %d (type %s) is smaller "
                           "than its header" % (size, C.record_name(rtype)))

    def finish(self, end):
        if self.rest:
            raise cut_error(self.path, self.rest_offset, len(self.rest))


def _as_pipe(fd):
    """Whether ``fd`` is a pipe or a socket (read through _Pipe). A pipe is asked to hold 1 MiB
    (Linux's F_SETPIPE_SZ; 1 MiB is what an unprivileged process may ask by default): 16x fewer
    wake-ups of the writer and of us than the 64 KiB default, which made `cat F | deferstitch
    stitch -` take 1.8x the file's time instead of 1.3x (bench/PROFILE.md); not allowed: left
    as it is."""
    import stat
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    if stat.S_ISFIFO(mode):
        try:
            import fcntl
            fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), CHUNK)
        except (ImportError, OSError, ValueError):
            pass
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class _Pipe:
    """A pipe read for what it holds: each read asks FIONREAD how much is there and reads that
    much (up to what is asked), waiting in select() when it is empty. A plain read of a CHUNK
    returns whatever the writer got in and Python shrinks the 1 MiB it allocated to that: with
    the engine's records in between, glibc could not reuse those holes, and `stitch -` from a
    pipe grew from 27 to 75 MB over 590 MB. Exact reads keep it flat, and still return as soon
    as anything is there (a live `perf record -o -` is read as it comes)."""

    def __init__(self, fd):
        import fcntl
        import select
        import termios
        self.fd, self._ioctl, self._fionread, self._select = fd, fcntl.ioctl, termios.FIONREAD, select.select
        self._avail = bytearray(4)

    def _ready(self):
        self._ioctl(self.fd, self._fionread, self._avail)
        return int.from_bytes(self._avail, sys.byteorder, signed=True)

    def read(self, n):
        avail = self._ready()
        if avail <= 0:
            self._select([self.fd], [], [])     # data, or the writer's end closed
            avail = self._ready()
            if avail <= 0:
                return os.read(self.fd, n)      # b"" at the end (or what came in between)
        return os.read(self.fd, min(n, avail))

    def seekable(self):
        return False

    def close(self):
        os.close(self.fd)


def cut_error(path, offset, left):
    """The compressed stream ended inside a record (``left`` bytes of it, last container at
    ``offset``)."""
    return FormatError(path, offset, "compressed stream ends inside a record (%d bytes left over)" % left)
