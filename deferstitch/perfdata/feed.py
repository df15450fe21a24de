"""perf records -> the stitcher's core events, in time order, and back out in time order.

    PerfData.records() -> sorter.ordered() -> PerfFeed -> Stitcher -> hold-back queue -> output

The stitcher resolves a sample only when its stack arrives, later in the stream. Outputs want
time order, so every record waits in a FIFO until all samples before it are resolved. The FIFO
is bounded too: past ``window`` records its oldest sample is given up as "evicted", so memory
follows what is pending, never the file size.
"""
import struct
from collections import deque

from ..abi import consts as C
from ..abi import records as R
from ..errors import FormatError
from ..model import NO_TASK, DeferredStack, Sample
from ..stitcher import DEFAULT_MAX_PENDING, Stitcher
from .sorter import OrderStats, ordered

_USER = C.PERF_CONTEXT_USER
_DEFERRED = C.PERF_CONTEXT_USER_DEFERRED
_MAX = C.PERF_CONTEXT_MAX


class SampleRef:
    """What an output needs of a perf sample: its record, decoded fields and event, and what
    the output prepared when the sample was resolved (``text``: perf script's lines)."""

    __slots__ = ("rec", "parsed", "entry", "text")

    def __init__(self, rec, parsed, entry):
        self.rec, self.parsed, self.entry = rec, parsed, entry
        self.text = None


def split_chain(chain):
    """(kernel part, cookie) of a callchain; cookie None unless it ends [USER_DEFERRED, cookie]."""
    if len(chain) >= 2 and chain[-2] == _DEFERRED:
        return chain[:-2], chain[-1]
    return chain, None


def user_frames(ips):
    """The user ips of a CALLCHAIN_DEFERRED, markers removed: (frames, how many were dropped)."""
    frames = tuple(ip for ip in ips if ip < _MAX)
    markers = len(ips) - len(frames)
    if ips and ips[0] == _USER:
        markers -= 1            # the leading PERF_CONTEXT_USER is expected, not a drop
    return frames, markers


def damage(perf, rec, err):
    """The error for a record the feed cannot decode (ValueError or struct.error ``err``)."""
    return FormatError(perf.path, rec.offset, "%s: %s" % (C.record_name(rec.type), err))


def decode(perf, rec):
    """Decode ``rec`` as PerfFeed.run does, for the C engine (what it does not decode itself):
    a sample's (pid, tid, cpu, time, period, callchain_offset, callchain_end, attr index), None
    for other records; damage raises the feed's FormatError."""
    t, e = rec.type, perf.endian
    try:
        if t == C.PERF_RECORD_SAMPLE:
            ent = perf.evlist.for_sample(rec.data)
            if ent is None:
                raise ValueError("sample id not found in any attr")
            p = ent.layout.parse(rec.data)
            return (p.pid, p.tid, p.cpu, p.time, p.period, p.callchain_offset, p.callchain_end, ent.index)
        if t == C.PERF_RECORD_CALLCHAIN_DEFERRED:
            ent = perf.evlist.for_trailer(rec.data)
            if ent:
                ent.layout.parse_trailer(rec.data)
            R.parse_deferred(rec.data, e, _body_end(perf, rec))
        elif t == C.PERF_RECORD_COMM:
            R.parse_comm(rec.data, e, _body_end(perf, rec), rec.misc)
        elif t in (C.PERF_RECORD_EXIT, C.PERF_RECORD_FORK):
            R.parse_task(rec.data, e)
        elif t == C.PERF_RECORD_LOST:
            R.parse_lost(rec.data, e)
        elif t == C.PERF_RECORD_LOST_SAMPLES:
            R.parse_lost_samples(rec.data, e)
    except (ValueError, struct.error) as err:
        raise damage(perf, rec, err) from None
    return None


def _body_end(perf, rec):
    ent = perf.evlist.for_trailer(rec.data)
    return len(rec.data) - (ent.layout.trailer.size if ent else 0)


class PerfFeed:
    """Drive a Stitcher from a PerfData; hand ``out.record(rec)`` / ``out.sample(sample)`` to the
    output in time order. Deferred records are consumed, not passed on."""

    def __init__(self, perf, out, max_pending=DEFAULT_MAX_PENDING, window=None, observe=None):
        self.perf, self.out = perf, out
        self.observe = observe     # sees every record as it arrives, in time order (maps, comms)
        self.on_resolved = getattr(out, "resolved", None)
        self.stitcher = Stitcher(self._resolved, max_pending)
        self.report = self.stitcher.report
        self.window = window if window is not None else max(5 * max_pending, 1024)
        self.fifo = deque()        # (record or Sample) in time order, waiting for the head
        self.comms = {}            # tid -> comm
        self.order_stats = OrderStats()
        self.record_counts = {}
        self.error = None

    # -- the loop -----------------------------------------------------------------------------
    def run(self):
        """Process the whole input. A FormatError stops reading; everything before it is
        still stitched and delivered, then the error is raised again."""
        perf = self.perf
        st = self.stitcher
        counts = self.record_counts
        observe = self.observe
        try:
            for rec in ordered(perf.records(), perf.evlist.time_of, self.order_stats):
                t = rec.type
                counts[t] = counts.get(t, 0) + 1
                if observe is not None:
                    observe(rec)
                try:
                    if t == C.PERF_RECORD_SAMPLE:
                        self._sample(rec)
                        continue
                    if t == C.PERF_RECORD_CALLCHAIN_DEFERRED:
                        self._deferred(rec)
                        continue
                    if t == C.PERF_RECORD_COMM:
                        c = R.parse_comm(rec.data, perf.endian, self._body_end(rec), rec.misc)
                        self.comms[c.tid] = c.comm
                    elif t == C.PERF_RECORD_EXIT:
                        task = R.parse_task(rec.data, perf.endian)
                        self._push(rec)
                        st.exit(task.tid, task.time)
                        self._drain()
                        continue
                    elif t == C.PERF_RECORD_FORK:
                        task = R.parse_task(rec.data, perf.endian)
                        st.reuse(task.tid)
                        if task.ptid in self.comms:        # a new thread starts with its parent's comm
                            self.comms[task.tid] = self.comms[task.ptid]
                    elif t == C.PERF_RECORD_LOST:
                        st.lost(1, R.parse_lost(rec.data, perf.endian).lost)
                    elif t == C.PERF_RECORD_LOST_SAMPLES:
                        st.lost(1, R.parse_lost_samples(rec.data, perf.endian).lost)
                except (ValueError, struct.error) as err:
                    raise damage(perf, rec, err) from None
                self._push(rec)
        except FormatError as err:
            self.error = err
        st.finish()
        self._drain()
        self.report.extra.update(self._extra())
        if self.error is not None:
            raise self.error
        return self.report

    def _extra(self):
        return {"records": {C.record_name(t): n for t, n in sorted(self.record_counts.items())},
                "unordered_records": self.order_stats.unordered,
                "max_queued_in_sorter": self.order_stats.max_queued,
                "forced_sorter_flushes": self.order_stats.forced_flushes}

    # -- events -------------------------------------------------------------------------------
    def _body_end(self, rec):
        return _body_end(self.perf, rec)

    def _sample(self, rec):
        ent = self.perf.evlist.for_sample(rec.data)
        if ent is None:
            raise ValueError("sample id not found in any attr")
        p = ent.layout.parse(rec.data)
        chain = p.callchain or ()
        if len(chain) >= 2 and chain[-2] == _DEFERRED:      # split_chain(), inlined: hot path
            kernel, cookie = chain[:-2], chain[-1]
        else:
            kernel, cookie = chain, None
        s = Sample(p.tid, p.pid, p.cpu, p.time, kernel, cookie, SampleRef(rec, p, ent),
                   self.comms.get(p.tid))
        self.fifo.append(s)
        if cookie is not None and (p.tid is None or p.time is None):
            self.stitcher.reject(s, NO_TASK)       # perf cannot match these either
        else:
            self.stitcher.sample(s)
        self._drain()

    def _deferred(self, rec):
        perf = self.perf
        ent = perf.evlist.for_trailer(rec.data)
        trailer = ent.layout.parse_trailer(rec.data) if ent else {}
        d = R.parse_deferred(rec.data, perf.endian, self._body_end(rec))
        frames, dropped = user_frames(d.ips)
        tid = trailer.get("tid")
        if tid is None:
            self.report.extra["deferred_without_tid"] = self.report.extra.get("deferred_without_tid", 0) + 1
            return
        self.stitcher.deferred(DeferredStack(tid, trailer.get("pid"), d.cookie, trailer.get("time"),
                                             frames, dropped))
        self._drain()

    # -- ordered output -----------------------------------------------------------------------
    def _resolved(self, s):
        """Called the moment a sample's outcome is known: names taken now see the maps as they
        were when its user stack was taken, as perf's own merge does."""
        if self.on_resolved is not None:
            self.on_resolved(s)

    def _push(self, rec):
        if self.fifo:
            self.fifo.append(rec)
            if len(self.fifo) > self.window:
                self.stitcher.evict_oldest()
                self._drain()
        else:
            self.out.record(rec)

    def _drain(self):
        fifo, out = self.fifo, self.out
        while fifo:
            head = fifo[0]
            if isinstance(head, Sample):
                if head.outcome is None:
                    return
                fifo.popleft()
                out.sample(head)
            else:
                fifo.popleft()
                out.record(head)
