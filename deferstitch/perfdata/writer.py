"""Write a file-mode perf.data: header, attrs and their ids, data records, feature sections.

Layout we write (every offset recomputed; perf finds each part through the header):

    0     perf_header (104)
    104   each attr's ids, then the attrs section (perf_session__write_header's order)
    ...   data: the records, streamed as they come
    ...   feature table (one perf_file_section per set bit: perf reads it right after data)
    ...   feature payloads

The attrs go before the data when they are known up front (``entries``: a file-mode input), so
that the file can be read from a pipe, which gives only what precedes the data. A pipe-format
input brings its attrs as records, in the stream: then, as ``perf inject`` does for a pipe
input (``write_attrs_after_data``, "perf header: Allow attributes to be written after data",
Linux 6.12), ids and attrs follow the feature payloads. So do they if the attrs changed after
the data began (the block before the data is then left unused).

``compat=True`` makes a file perf 6.1 accepts: attrs shrunk to 128 bytes (their tail must be
zero), defer_callchain/defer_output cleared, and records perf 6.1 does not know (type 22, user
types after FINISHED_INIT) left out and counted in ``dropped``.
"""
import io
import struct

from ..abi import consts as C
from ..abi.attr import PERF_ATTR_SIZE_VER7
from . import features as F
from .header import HEADER_SIZE, Section, pack_header

# Records that only make sense in a pipe: their content becomes header sections instead.
PIPE_ONLY = (C.PERF_RECORD_HEADER_ATTR, C.PERF_RECORD_HEADER_FEATURE,
              C.PERF_RECORD_HEADER_TRACING_DATA, C.PERF_RECORD_HEADER_BUILD_ID,
              C.PERF_RECORD_COMPRESSED, C.PERF_RECORD_COMPRESSED2)


class PerfWriter:
    def __init__(self, f, endian, compat=False, entries=None):
        """``entries``: the session's EventEntry objects when known before the data."""
        self.f, self.endian, self.compat = f, endian, compat
        self.dropped = {}           # record type -> how many were left out
        self.tracing_data = None
        self.front = None           # (attrs Section, asize, bytes): the attrs before the data
        f.write(b"\0" * HEADER_SIZE)
        self.pos = HEADER_SIZE
        if entries:
            attrs, asize, blob = self._attrs(entries, HEADER_SIZE)
            f.write(blob)
            self.pos += len(blob)
            self.front = (attrs, asize, blob)
        self.data_start = self.pos
        self.sunk = 0               # bytes the C engine wrote to our file itself (engine_sink)
        self.behind = False         # f's position is behind what the engine wrote

    def keep(self, rtype):
        """Whether a record of this type goes into the file."""
        if rtype in PIPE_ONLY:
            return False
        if self.compat and (rtype == C.PERF_RECORD_CALLCHAIN_DEFERRED
                            or rtype > C.PERF_RECORD_LAST_KNOWN_TO_61):
            return False
        return True

    def keep_table(self):
        """keep() of every u16 record type, one byte each (the C engine's copy of the rule):
        past the last type it names, the rule no longer depends on the type."""
        last = max(max(PIPE_ONLY), C.PERF_RECORD_CALLCHAIN_DEFERRED, C.PERF_RECORD_LAST_KNOWN_TO_61) + 1
        head = bytes(self.keep(t) for t in range(last + 1))
        return head + head[-1:] * (65536 - len(head))

    def engine_sink(self):
        """(fd, error) for the C engine to write its records to our file itself (no bytes object
        per chunk: pipeline.py), or None when the file is not one of output/atomic.py's (a
        test's BytesIO): error(errno) is that file's one-line OutputError."""
        raw = getattr(self.f, "raw", None)
        error = getattr(raw, "error", None)
        try:
            fd = self.f.fileno()
        except (AttributeError, OSError, io.UnsupportedOperation):
            return None
        if error is None:
            return None
        self.f.flush()          # the engine writes after what we wrote
        return fd, error

    def engine_wrote(self, total):
        """The engine has written ``total`` bytes to the file so far (engine_sink)."""
        n = total - self.sunk
        if n:
            self.sunk, self.pos, self.behind = total, self.pos + n, True
            wrote = getattr(self.f.raw, "wrote", None)     # (output/atomic.py: drop behind)
            if wrote is not None:
                wrote(n)

    def _catch_up(self):
        if self.behind:         # our buffered file's idea of the position is the engine's now
            self.f.seek(self.pos)
            self.behind = False

    def write(self, rec, data=None):
        """Write one record (``data`` replaces its bytes, e.g. a stitched sample)."""
        self._catch_up()
        if rec.type == C.PERF_RECORD_HEADER_TRACING_DATA and len(rec.data) >= 12:
            n = struct.unpack_from(self.endian + "I", rec.data, 8)[0]
            self.tracing_data = rec.extra[:n]
        if not self.keep(rec.type):
            self.dropped[rec.type] = self.dropped.get(rec.type, 0) + 1
            return
        data = rec.data if data is None else data
        self.f.write(data)
        self.pos += len(data)
        if rec.extra:
            self.f.write(rec.extra)
            self.pos += len(rec.extra)

    def write_kept(self, data):
        """Records already filtered by ``keep`` (the C engine's output, see engine.py)."""
        self._catch_up()
        self.f.write(data)
        self.pos += len(data)

    def close(self, entries, features):
        """Finish the file: ``entries`` are the session's EventEntry objects, ``features`` maps
        feature bit -> raw payload. The file object is left open for the caller."""
        e = self.endian
        self._catch_up()
        data = Section(self.data_start, self.pos - self.data_start)
        feats = dict(features)
        if self.tracing_data is not None:
            feats.setdefault(C.HEADER_TRACING_DATA, self.tracing_data)
        feats.pop(C.HEADER_COMPRESSED, None)        # we always write the records decompressed
        asize = self._attr_size(entries)
        if C.HEADER_EVENT_DESC in feats:
            feats[C.HEADER_EVENT_DESC] = self._event_desc(feats[C.HEADER_EVENT_DESC], entries, asize)
        # (an empty section is one perf never writes and rejects: "section too small")
        bits = sorted(b for b in feats if 0 < b < C.HEADER_FEAT_BITS and feats[b])
        off = self.pos + 16 * len(bits)
        table, payloads = [], []
        for b in bits:
            table.append(struct.pack(e + "QQ", off, len(feats[b])))
            payloads.append(feats[b])
            off += len(feats[b])
        self.f.write(b"".join(table) + b"".join(payloads))
        front = self.front
        if front is not None and self._attrs(entries, HEADER_SIZE)[2] == front[2]:
            attrs, asize = front[0], front[1]
        else:                   # not known before the data (pipe input), or changed since
            attrs, asize, blob = self._attrs(entries, off)
            self.f.write(blob)
        self.f.seek(0)
        self.f.write(pack_header(e, asize + 16, attrs, data, bits))
        self.f.seek(0, 2)

    def _attrs(self, entries, at):
        """(attrs Section, attr size, bytes) of each attr's ids then the perf_file_attr
        array ({attr; perf_file_section ids}), laid out from offset ``at``."""
        e, asize = self.endian, self._attr_size(entries)
        ids_blob, attrs_blob = [], []
        off = at
        for ent in entries:
            ids = struct.pack(e + "%dQ" % len(ent.ids), *ent.ids)
            attrs_blob.append(ent.attr.pack(asize, clear_defer=self.compat)
                              + struct.pack(e + "QQ", off, len(ids)))
            ids_blob.append(ids)
            off += len(ids)
        return Section(off, len(attrs_blob) * (asize + 16)), asize, b"".join(ids_blob + attrs_blob)

    def _attr_size(self, entries):
        sizes = [len(ent.attr.raw) for ent in entries] or [PERF_ATTR_SIZE_VER7]
        if self.compat:
            return PERF_ATTR_SIZE_VER7
        return max(sizes)

    def _event_desc(self, raw, entries, asize):
        """EVENT_DESC holds attrs too: rewrite them like the attrs section."""
        try:
            events = F.parse_event_desc(raw, self.endian)
        except (struct.error, ValueError):
            events = [(ent.attr, ent.name, ent.ids) for ent in entries]
        return F.pack_event_desc(events, self.endian, asize, self.compat)
