"""Drive the C engine (deferstitch/_accel.c) over a perf.data, when it can take the file.

    data section, 1 MiB at a time -> Engine.feed -> bytes (stitched records) or events

The engine does the per-record work of reader -> sorter -> PerfFeed -> Stitcher with the same
rules; metadata records and compressed containers come back here (PerfData._note,
_Decompressor), so each is decoded in one place. It takes a named perf.data file (file or pipe
format) in the host's byte order; anything else, and anything unusual inside (it raises
``Fallback`` at the first thing it does not take as ordinary), goes through the Python path,
which is the definition and gives the errors with their offsets.
"""
import os
import sys
from collections import Counter

from ..abi import consts as C
from ..abi.records import DEFERRED_NO_COOKIE
from ..abi.sample import _FIXED_AND_CHAIN
from ..model import PASSED, REASONS, STITCHED
from ..report import CORE_COUNTS, StitchReport
from ..stitcher import DEFAULT_EXIT_GRACE
from .feed import probe_layout
from .reader import CHUNK, Record, _Decompressor
from .sorter import DEFAULT_MAX_QUEUED

try:
    from .. import _accel
    Fallback = _accel.Fallback
except ImportError:           # not built (no compiler), or perf's embedded Python
    _accel = None

    class Fallback(Exception):
        pass

MODE_FILE, MODE_EVENTS, MODE_NONE, MODE_ORDERED = 0, 1, 2, 3
KEYS = (STITCHED, PASSED) + REASONS      # the engine's outcome numbers
READ_SIZE = CHUNK


def available():
    return _accel is not None


def unavailable(perf):
    """Why the engine cannot take this input, or None when it can."""
    if _accel is None:
        return "the C engine is not built"
    if os.environ.get("DEFERSTITCH_ACCEL", "1") == "0":
        return "DEFERSTITCH_ACCEL=0"
    if perf.path == "<stdin>" or not perf._s.seekable or perf._s.size is None:
        return "input is not a named regular file (standard input takes the Python path)"
    if perf.endian != ("<" if sys.byteorder == "little" else ">"):
        return "byte order differs from this machine's"
    if perf.feature_error is not None:
        return "damaged feature sections"
    if not all(_simple(e.layout) for e in perf.evlist.entries):
        return "sample fields past the callchain"
    # (without the defer bit a stray no-cookie chain still reaches the engine, which hands it back)
    ents = perf.evlist.entries          # (none yet: a pipe-format file, attrs come as records)
    if (not ents or any(e.attr.defer_callchain for e in ents)) and \
            probe_layout(perf.path) == DEFERRED_NO_COOKIE:
        return "deferred callchains without cookies (matched by task order on the Python path)"
    return None


def _simple(layout):
    st = layout.sample_type
    return not st & C.PERF_SAMPLE_READ and not st & ~_FIXED_AND_CHAIN


def plan(evlist):
    """What the engine needs of the attrs: where ids, times, tids and chains sit (SampleLayout)."""
    lays = []
    for ent in evlist.entries:
        lay = ent.layout
        names = lay.prefix_names
        lays.append((int(_simple(lay)), lay.time_offset, lay.tid_offset,
                     lay._prefix_offset(names, "cpu"), lay._prefix_offset(names, "period"),
                     lay.prefix_end, int(lay.has_callchain), lay.trailer.size,
                     lay.trailer_time_from_end, lay.trailer_tid_from_end, int(bool(lay.trailer_names))))
    return (evlist._sample_id_at, evlist._trailer_id_from_end,
            {i: ent.index for i, ent in evlist.by_id.items()}, lays)


class EngineRun:
    """One pass of the engine over ``perf``: ``chunks()`` yields its output as it comes,
    ``report()`` gives the StitchReport after the last chunk."""

    def __init__(self, perf, mode, max_pending, window=None, keep=None):
        """``keep``: 65536 flags, which record types a MODE_FILE output writes (keep_table)."""
        self.perf = perf
        flags = keep if keep is not None else b"\1" * 65536
        note, decompress = _callbacks(perf)     # closures, not bound methods: no cycle to collect
        self.engine = _accel.Engine(plan(perf.evlist), mode, flags, note, decompress,
                                    Record, max_pending,
                                    window if window is not None else max(5 * max_pending, 1024),
                                    DEFAULT_EXIT_GRACE, DEFAULT_MAX_QUEUED, perf.data_start)

    def chunks(self):
        """The engine's output per READ_SIZE of input; Fallback when the data section is cut
        short (the Python path says where)."""
        perf = self.perf
        f = perf._f
        f.seek(perf.data_start)
        end = perf.data_end if perf.data_end is not None else perf._s.size    # pipe format: to EOF
        left = end - perf.data_start
        feed = self.engine.feed
        while left > 0:
            buf = f.read(min(READ_SIZE, left))
            if not buf:
                raise Fallback("file ends inside the data section")
            left -= len(buf)
            yield feed(buf)
        yield self.engine.finish()

    def report(self):
        st = self.engine.state()
        r = StitchReport()
        r.source = "perf"
        for k in CORE_COUNTS:
            setattr(r, k, st[k])
        r.first_unmatched = [(t, tid, c, KEYS[k]) for t, tid, c, k in st["first_unmatched"]]
        r.orphans = list(st["orphans"])
        cells, comms = [], {}
        for tid, cpu, counts, firsts, comm, comm_seq in st["cells"]:
            for k, n in enumerate(counts):
                if n:
                    cells.append((firsts[k], (tid, cpu, KEYS[k]), n))
            if comm is not None and comm_seq > comms.get(tid, (0, None))[0]:
                comms[tid] = (comm_seq, comm)
        r._cells = {key: n for _seq, key, n in sorted(cells, key=lambda c: c[0])}
        r.unmatched = Counter()               # reasons in the order first seen, as count() adds them
        for (_tid, _cpu, key), n in r._cells.items():
            if key not in (STITCHED, PASSED):
                r.unmatched[key] += n
        r._comms = {tid: comm for tid, (_seq, comm) in comms.items()}
        if st["deferred_without_tid"]:
            r.extra["deferred_without_tid"] = st["deferred_without_tid"]
        r.extra.update({"records": {C.record_name(t): n for t, n in sorted(st["counts"].items())},
                        "unordered_records": st["unordered"],
                        "max_queued_in_sorter": st["max_queued"],
                        "forced_sorter_flushes": st["forced_flushes"]})
        self.dropped = st["dropped"]
        return r


def _callbacks(perf):
    """What the engine hands back: metadata records (the reader's _note, then the new plan) and
    compressed containers (their decompressed bytes)."""
    decomp = []

    def note(rec):
        perf._note(rec)
        return plan(perf.evlist)

    def decompress(rec):
        if not decomp:
            decomp.append(_Decompressor(perf.path))
        return decomp[0].payload(perf, rec)
    return note, decompress

