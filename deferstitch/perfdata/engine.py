"""Drive the C engine (deferstitch/_accel.c) over a perf.data: one pass, any input the reader takes.

    reader's buffer --+-- whole ordinary records, in place ---------> Engine.feed --> events, or
                      +-- the rest, framed by PerfData.slow_record --> Engine.feed /    the stitched
                                                                        Engine.foreign   file's records

The engine does the per-record work of reader -> sorter -> PerfFeed -> Stitcher with the same
rules. It frames ordinary records straight from the reader's buffer; the reader frames the rest
the careful way, one record at a time (a record cut by the buffer's end, a payload after its
size, damage), so framing errors are the reader's own. Metadata records, compressed containers
and what the engine does not decode itself (sample layouts it does not walk, damaged records)
go back to the Python decoders (PerfData.note, Decompressor, feed.decode), so each is decoded
in one place and every error carries the Python path's text and offset. Nothing is read twice:
standard input runs on the engine too.
"""
import os
import struct
import sys
from collections import Counter

from ..abi import consts as C
from ..abi.records import DEFERRED_NO_COOKIE
from ..abi.sample import FIXED_AND_CHAIN
from ..errors import FormatError
from ..model import OUTCOME_KEYS, PASSED, STITCHED
from ..report import CORE_COUNTS, StitchReport
from ..stitcher import DEFAULT_EXIT_GRACE
from .feed import decode, layout_ahead
from .reader import Record, Decompressor, cut_error
from .sorter import DEFAULT_MAX_QUEUED

try:
    from .. import _accel
except ImportError:           # not built (no compiler), or perf's embedded Python
    _accel = None

# the engine's modes and outcome numbers: deferstitch/_twin.h's (tests/test_twin_constants.py)
MODE_FILE, MODE_EVENTS, MODE_NONE, MODE_ORDERED, MODE_COUNTED, MODE_CHAINS, MODE_OUTCOMES = 0, 1, 2, 3, 5, 6, 7
KEYS = OUTCOME_KEYS


def available():
    return _accel is not None


def unavailable(perf):
    """Why the engine cannot take this input, or None when it can."""
    if _accel is None:
        return "the C engine is not built"
    if os.environ.get("DEFERSTITCH_ACCEL", "1") == "0":
        return "DEFERSTITCH_ACCEL=0"
    if perf.endian != ("<" if sys.byteorder == "little" else ">"):
        return "byte order differs from this machine's"
    for ent in perf.evlist.entries:     # (none yet in a pipe-format file: attrs come as records)
        if ent.layout.sample_type & C.PERF_SAMPLE_READ:
            return "PERF_SAMPLE_READ: a sample per group member, on the Python path"
        if ent.layout.lbr_callstack:
            return "LBR call stacks, rebuilt from the branch stack on the Python path"
    # the layout, read ahead on the reader (files and pipes alike): far in a file that asks for
    # deferred callchains; in one that does not, a little (a stray no-cookie chain past that is
    # one line from the engine: run with DEFERSTITCH_ACCEL=0)
    ents = perf.evlist.entries          # (none yet in a pipe-format file: attrs come as records)
    far = not ents or any(e.attr.defer_callchain for e in ents)
    if layout_ahead(perf, 100_000 if far else 2_000) == DEFERRED_NO_COOKIE:
        return "deferred callchains without cookies (matched by task order on the Python path)"
    return None


def _simple(layout):
    st = layout.sample_type
    return not st & C.PERF_SAMPLE_READ and not st & ~FIXED_AND_CHAIN


def plan(evlist):
    """What the engine needs of the attrs: where ids, times, tids and chains sit (SampleLayout)."""
    lays = []
    for ent in evlist.entries:
        lay = ent.layout
        names = lay.prefix_names
        lays.append((int(_simple(lay)), lay.time_offset, lay.tid_offset,
                     lay.prefix_offset(names, "cpu"), lay.prefix_offset(names, "period"),
                     lay.prefix_end, int(lay.has_callchain), lay.trailer.size,
                     lay.trailer_time_from_end, lay.trailer_tid_from_end, int(bool(lay.trailer_names)),
                     lay.prefix_offset(names, "ip")))
    return (evlist.sample_id_at, evlist.trailer_id_from_end,
            {i: ent.index for i, ent in evlist.by_id.items()}, lays)


class EngineRun:
    """One pass of the engine over ``perf``: ``chunks()`` yields its output as it comes,
    ``report()`` gives the StitchReport after the last chunk."""

    def __init__(self, perf, mode, max_pending, window=None, keep=None, select=None):
        """``keep``: 65536 flags, which record types a MODE_FILE output writes (keep_table);
        ``select``: a selection.Selection, the samples counted and output."""
        self.perf, self.select = perf, select
        flags = keep if keep is not None else b"\1" * 65536
        note, decompress, dec = _callbacks(perf)     # closures, not bound methods: no cycle to collect
        self.engine = _accel.Engine(plan(perf.evlist), mode, flags, note, decompress, dec, Record,
                                    FormatError, max_pending,
                                    window if window is not None else max(5 * max_pending, 1024),
                                    DEFAULT_EXIT_GRACE, getattr(perf, "max_queued", DEFAULT_MAX_QUEUED))
        if select is not None:
            lists = [None if v is None else sorted(v) for v in (select.pids, select.tids)]
            self.engine.select(*lists, select.comms, None if select.cpus is None else sorted(select.cpus),
                               select.ranges)
        self.dropped = {}
        self.truncated = (0, 0)           # MODE_FILE: stitched samples cut to fit, frames cut
        self.offset = perf.data_start     # how far the input has been read (progress)

    def chunks(self):
        """The engine's output after each read of the input (bytes, events or None: see
        Engine.sink in _accel.c for the stitched file the engine writes itself). Damage
        raises the Python path's FormatError after the last chunk, which holds what came before
        it, as the Python path delivers it."""
        perf, eng = self.perf, self.engine
        feed, output = eng.feed, eng.output
        reading = True          # a FormatError now is the reader's (else the engine's, wound up)
        parts = getattr(perf, "parts", None) or [perf]      # several files (recording.py): in turn
        part = perf
        try:
            for n, part in enumerate(parts):
                if n:
                    eng.boundary()      # as recording.Sequence.records marks it
                s, end = part.stream, part.data_end
                hdr = struct.Struct(part.endian + "IHH").unpack_from
                s.goto(part.data_start, "data section")
                while True:
                    at = s.pos
                    if end is not None and at >= end:
                        break
                    have = len(s.buf) - s.bpos
                    if end is not None and end - at < have:
                        have = end - at
                    reading = False
                    n = feed(s.buf, s.bpos, have, at) if have >= 8 else 0
                    if n:
                        s.bpos += n
                    else:                   # the reader frames this one (reader.py slow_record)
                        reading = True
                        rec = part.slow_record(s, at, end, hdr)
                        if rec is None:
                            break           # a pipe ends where its last record ends
                        if rec.type == C.PERF_RECORD_AUXTRACE:
                            part.note(rec)     # the reader counts it (auxtrace.py), as records() does
                        reading = False
                        if rec.extra or rec.type in _FOREIGN or rec.type > 0xFFFF:
                            if rec.type == C.PERF_RECORD_HEADER_TRACING_DATA:
                                part.note(rec)     # tracepoint names, as the reader notes them
                            eng.foreign(rec)
                        elif feed(rec.data, 0, len(rec.data), at) != len(rec.data):
                            raise RuntimeError("the C engine left a whole record at %#x" % at)
                    reading = True
                    yield output()
                    self.offset = s.pos
                left, container = eng.leftover()
                if left:
                    raise cut_error(part.path, container, left)
                part.features_after_data()
            reading = False
            eng.finish()
        except FormatError as err:
            error = _named(err, part.path)
            if reading:             # the sorter's queue is still delivered (sorter.ordered)
                try:
                    eng.abort()
                except FormatError as flushed:      # ... unless a record in it is damaged too
                    error = _named(flushed, part.path)
                except _accel.Limit as err:         # ... or one the engine cannot take
                    error = FormatError(part.path, err.args[0], err.args[1])
            yield output()
            raise error
        except _accel.Limit as err:
            raise FormatError(part.path, err.args[0], err.args[1]) from None
        yield output()

    def report(self):
        st = self.engine.state()
        r = StitchReport()
        r.source = "perf"
        if getattr(self.perf, "boundaries", None) is not None:     # as PerfFeed counts them
            r.extra["stitched_across_files"] = st["stitched_across_files"]
        for k in CORE_COUNTS:
            setattr(r, k, st[k])
        if self.select is not None:
            r.selection, r.not_chosen = self.select.text, st["not_chosen"]
        r.first_unmatched = [(t, tid, c, KEYS[k]) for t, tid, c, k in st["first_unmatched"]]
        r.orphans = list(st["orphans"])
        cells, comms = [], {}
        for tid, cpu, counts, firsts, comm, comm_seq in st["cells"]:
            for k, n in enumerate(counts):
                if n:
                    cells.append((firsts[k], (tid, cpu, KEYS[k]), n))
            if comm is not None and comm_seq > comms.get(tid, (0, None))[0]:
                comms[tid] = (comm_seq, comm)
        r.cells = {key: n for _seq, key, n in sorted(cells, key=lambda c: c[0])}
        r.unmatched = Counter()               # reasons in the order first seen, as count() adds them
        for (_tid, _cpu, key), n in r.cells.items():
            if key not in (STITCHED, PASSED):
                r.unmatched[key] += n
        r.comms = {tid: comm for tid, (_seq, comm) in comms.items()}
        if st["deferred_without_tid"]:
            r.extra["deferred_without_tid"] = st["deferred_without_tid"]
        counts = {**st["counts"], **st["big_counts"]}
        r.extra.update({"records": {C.record_name(t): n for t, n in sorted(counts.items())},
                        "unordered_records": st["unordered"],
                        "max_queued_in_sorter": st["max_queued"],
                        "forced_sorter_flushes": st["forced_flushes"]})
        if self.perf.auxtrace:
            r.extra["auxtrace"] = self.perf.auxtrace.to_json()
        self.dropped = st["dropped"]
        self.truncated = (st["truncated"], st["truncated_frames"])
        return r


_FOREIGN = (C.PERF_RECORD_AUXTRACE, C.PERF_RECORD_HEADER_TRACING_DATA)


class _Payloads:
    """Compressed containers for the engine: their decompressed bytes (one Decompressor for
    the session, made at the first container), and the reader's error for a record in them
    smaller than its header."""

    def __init__(self, perf):
        self.perf, self.decomp = perf, None

    def _get(self):
        if self.decomp is None:
            self.decomp = Decompressor(self.perf.path)
        return self.decomp

    def __call__(self, rec):
        return self._get().payload(self.perf, rec)

    def small(self, offset, rtype, size):
        return self._get().small(offset, rtype, size)


def _callbacks(perf):
    """What the engine hands back: metadata records (the reader's note, then the new plan),
    compressed containers, and records it does not decode itself (feed.decode)."""

    def note(rec):
        perf.note(rec)
        return plan(perf.evlist)

    def dec(rec):
        return decode(perf, rec)
    return note, _Payloads(perf), dec


def _named(err, path):
    """A FormatError raised by the engine itself (no path: it knows offsets only) named for the file."""
    return FormatError(path, err.offset, err.message) if err.path is None else err
