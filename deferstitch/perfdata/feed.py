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
from ..abi.sample import split_chain
from ..errors import FormatError
from ..model import NO_COOKIE, NO_TASK, STITCHED, DeferredStack, Sample
from ..stitcher import DEFAULT_MAX_PENDING, Stitcher
from .buffers import LossWatch, read_ahead
from .reader import PerfData
from .sorter import DEFAULT_MAX_QUEUED, OrderStats, ordered

_USER = C.PERF_CONTEXT_USER
_DEFERRED = C.PERF_CONTEXT_USER_DEFERRED
_MAX = C.PERF_CONTEXT_MAX
_CPUMODE, _MODE_USER = C.PERF_RECORD_MISC_CPUMODE_MASK, C.PERF_RECORD_MISC_USER


class SampleRef:
    """What an output needs of a perf sample: its record, decoded fields, event and period, and
    what the output prepared when the sample was resolved (``text``: perf script's lines).
    A group read gives one sample per member (see PerfFeed._members): each has its member's
    event and period; only the ``lead`` one stands for the record in a rewritten file."""

    __slots__ = ("rec", "parsed", "entry", "period", "lead", "text")

    def __init__(self, rec, parsed, entry, period, lead=True):
        self.rec, self.parsed, self.entry, self.period, self.lead = rec, parsed, entry, period, lead
        self.text = None


def user_frames(ips):
    """The user ips of a CALLCHAIN_DEFERRED, markers removed: (frames, how many were dropped)."""
    frames = tuple(ip for ip in ips if ip < _MAX)
    markers = len(ips) - len(frames)
    if ips and ips[0] == _USER:
        markers -= 1            # the leading PERF_CONTEXT_USER is expected, not a drop
    return frames, markers


def lbr_chain(chain, ip, branches):
    """The callchain perf shows for a sample of an LBR call-stack event (machine.c,
    resolve_lbr_callchain_sample in callee order): the chain up to its PERF_CONTEXT_USER, then
    the sample's ip, then where each branch came from, newest first. None when the chain has no
    PERF_CONTEXT_USER: perf then shows the chain as it is.

    The leaf is the sample's ip since perf 7.0 ("perf callchain lbr: Make the leaf IP that of the
    sample", 04f81f45b432, Feb 2026); before, and still when the sample has no ip, it was the
    newest branch's target. With no branch and no ip perf reads past the record; we show no leaf.
    """
    try:
        i = chain.index(_USER)
    except ValueError:
        return None
    leaf = ip or (branches[0][1] if branches else None)
    return chain[:i + 1] + ((leaf,) if leaf is not None else ()) + tuple(b[0] for b in branches)


def layout_ahead(perf, limit=100_000):
    """The deferred layout of ``perf`` ("cookie" or "no-cookie"), for what must know it before
    the run starts (engine.unavailable: the C engine stitches by cookie only): its first
    deferred chain or CALLCHAIN_DEFERRED record, as PerfFeed._layout takes it, read ahead on the
    reader itself (PerfData.ahead: the run reads those records again from memory or the page
    cache, never a second open; a pipe alike); None when the first ``limit`` records hold
    neither, or the file is damaged before (the run will say where). Kept on ``perf``."""
    known = perf.layouts_ahead
    if limit in known:
        return known[limit]
    layout = None
    try:
        with perf.ahead() as records:
            for n, rec in enumerate(records):
                if n >= limit:
                    break
                if rec.type == C.PERF_RECORD_SAMPLE:
                    ent = perf.evlist.for_sample(rec.data)
                    layout = split_chain(ent.layout.parse(rec.data).callchain or ())[2] if ent else None
                elif rec.type == C.PERF_RECORD_CALLCHAIN_DEFERRED:
                    ent = perf.evlist.for_trailer(rec.data)
                    layout = R.deferred_layout(rec.data, perf.endian,
                                               len(rec.data) - (ent.layout.trailer.size if ent else 0))
                if layout is not None:
                    break
    except (FormatError, ValueError, struct.error, OSError):
        layout = None
    known[limit] = layout
    return layout


def probe_layout(path, limit=100_000):
    """layout_ahead() of the perf.data at ``path``."""
    try:
        with PerfData.open(path) as perf:
            return layout_ahead(perf, limit)
    except (FormatError, OSError):
        return None


def requeued_stacks(entries):
    """Whether a no-cookie file's stacks are those of the pre-cookie series' task events, each
    queued again when sampled after it ran (stitcher.py): no attr has defer_output (7.x writes a
    CALLCHAIN_DEFERRED only to such an event: perf_callchain_deferred_output()) and every attr
    that defers is disabled until exec, as perf record makes the events of the command it starts
    (perf_event_enable_on_exec() enables a task's own events, never a CPU's)."""
    attrs = [e.attr for e in entries]
    defer = [a for a in attrs if a.defer_callchain]
    return bool(defer) and not any(a.defer_output for a in attrs) and all(
        a.disabled and a.enable_on_exec for a in defer)


def loss_watch(perf):
    """The LossWatch a stitch by task order needs (perfdata/buffers.py), or None: not for a
    cookie file, nor for a file without any LOST or LOST_SAMPLES record (read ahead on a
    separate handle, without cookies only), whose stitches are all proven as they come."""
    if perf.path == "<stdin>" or getattr(perf, "parts", None):     # a pipe, several files
        return LossWatch(perf)
    if layout_ahead(perf) == R.DEFERRED_COOKIE:
        return None
    ahead = read_ahead(perf.path)
    if ahead is not None and not ahead.losses:
        return None
    return LossWatch(perf, ahead)


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
    output in time order. Deferred records are consumed, not passed on.

    The file's deferred layout (``layout``: "cookie" or "no-cookie", None until seen) is set by
    the first deferred chain or CALLCHAIN_DEFERRED record; without cookies the stitcher matches
    by task order. A record of the other layout afterwards is damage."""

    def __init__(self, perf, out, max_pending=DEFAULT_MAX_PENDING, window=None, observe=None,
                 select=None):
        self.perf, self.out = perf, out
        self.select = select       # a selection.Selection: which samples are counted and handed on
        self.observe = observe     # sees every record as it arrives, in time order (maps, comms)
        self.on_resolved = getattr(out, "resolved", None)
        self.on_arrived = getattr(out, "arrived", None)
        self.on_passing = getattr(out, "passing", None)
        self.in_order = getattr(out, "in_order", True)   # out takes record()/sample(): hold back
        self.stitcher = Stitcher(self._resolved, max_pending)
        self.report = self.stitcher.report
        self.report.source = "perf"
        if select is not None:
            self.report.selection = select.text
        self.window = window if window is not None else max(5 * max_pending, 1024)
        self.fifo = deque()        # (record or Sample) in time order, waiting for the head
        self.comms = {}            # tid -> comm
        self.exited = set()        # tids whose EXIT came (perf forgets the thread: its comm too)
        self.read_last = {}        # id or (id, tid) -> its last PERF_SAMPLE_READ value
        self.order_stats = OrderStats()
        self.record_counts = {}
        self.error = None
        self.layout = None
        self.watch = None          # which buffer lost what, when: files without cookies (run())
        self.boundaries = getattr(perf, "boundaries", None)   # a sequence of files (recording.py)
        if self.boundaries is not None:
            self.report.extra["stitched_across_files"] = 0

    # -- the loop -----------------------------------------------------------------------------
    def run(self):
        """Process the whole input. A FormatError stops reading; everything before it is
        still stitched and delivered, then the error is raised again."""
        perf = self.perf
        st = self.stitcher
        counts = self.record_counts
        observe = self.observe
        records = perf.records()
        self.watch = loss_watch(perf)
        if self.watch is not None:
            records = self.watch.records(records)
        watch = self.watch
        advanced = 0
        try:
            for rec in ordered(records, perf.evlist.time_of, self.order_stats,
                               getattr(perf, "max_queued", DEFAULT_MAX_QUEUED)):
                if st.parked and watch.advanced != advanced:
                    advanced = watch.advanced
                    st.proof_advanced()
                    self._drain()
                t = rec.type
                counts[t] = counts.get(t, 0) + 1
                if observe is not None:
                    observe(rec)
                if t != C.PERF_RECORD_SAMPLE and self.on_passing is not None:
                    self.on_passing(rec)
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
                        self.exited.discard(c.tid)
                    elif t == C.PERF_RECORD_EXIT:
                        task = R.parse_task(rec.data, perf.endian)
                        self._push(rec)
                        if self.select is not None and self.select.comms is not None:
                            self.exited.add(task.tid)
                        st.exit(task.tid, task.time)
                        self._drain()
                        continue
                    elif t == C.PERF_RECORD_FORK:
                        task = R.parse_task(rec.data, perf.endian)
                        st.reuse(task.tid, task.time)
                        self.exited.discard(task.tid)
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
            self.report.error = str(err)    # the report says it is of a part only
        st.finish()
        self._drain()
        self.report.extra.update(self._extra())
        if self.error is not None:
            raise self.error
        return self.report

    def _extra(self):
        extra = {"records": {C.record_name(t): n for t, n in sorted(self.record_counts.items())},
                 "unordered_records": self.order_stats.unordered,
                 "max_queued_in_sorter": self.order_stats.max_queued,
                 "forced_sorter_flushes": self.order_stats.forced_flushes}
        if self.perf.auxtrace:
            extra["auxtrace"] = self.perf.auxtrace.to_json()
        if self.layout == R.DEFERRED_NO_COOKIE:
            extra["no_cookie_stacks"] = "requeued" if self.stitcher.requeued else "per-entry"
            extra["no_cookie_held_back"] = dict(sorted(self.stitcher.held_back.items()))
        return extra

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
            if self.layout != R.DEFERRED_COOKIE:
                self._layout(R.DEFERRED_COOKIE, "sample")
        elif chain and chain[-1] == _DEFERRED:
            kernel, cookie = chain[:-1], NO_COOKIE
            if self.layout != R.DEFERRED_NO_COOKIE:
                self._layout(R.DEFERRED_NO_COOKIE, "sample")
        else:
            kernel, cookie = chain, None
            if p.branch_stack is not None and ent.layout.lbr_callstack:
                kernel = lbr_chain(chain, p.ip, p.branch_stack.entries) or chain
        user_mode = rec.misc & _CPUMODE == _MODE_USER
        if p.read is None:
            self._one(Sample(p.tid, p.pid, p.cpu, p.time, kernel, cookie,
                             SampleRef(rec, p, ent, p.period), self.comms.get(p.tid), user_mode))
            return
        members = self._members(p, ent)
        if not members:           # nothing perf would show; a rewritten file still keeps it
            self._push(rec)
            return
        for n, (member, period) in enumerate(members):
            self._one(Sample(p.tid, p.pid, p.cpu, p.time, kernel, cookie,
                             SampleRef(rec, p, member, period, lead=n == 0), self.comms.get(p.tid),
                             user_mode))

    def _one(self, s):
        if self.select is not None:      # a thread after its EXIT is a new one to perf: ":TID"
            s.chosen = self.select.admits(s.pid, s.tid, None if s.tid in self.exited else s.comm,
                                          s.cpu, s.time)
        if self.on_arrived is not None:
            self.on_arrived(s)
        if self.in_order:
            self.fifo.append(s)
        if s.cookie is not None and (s.tid is None or s.time is None):
            self.stitcher.reject(s, NO_TASK)       # perf cannot match these either
        else:
            self.stitcher.sample(s)
        self._drain()

    def _members(self, p, ent):
        """[(event, period)] that perf delivers for a sample with PERF_SAMPLE_READ (session.c,
        deliver_sample_group / deliver_sample_value): each read value goes to the event its id
        names, its period the value minus the last value read for that id (per thread when the
        attr has inherit and TID: perf_evsel__attr_has_per_thread_sample_period). A value whose
        id is unknown, or whose period is 0, is not delivered; the report counts both.

        Deltas follow the samples' time order, as perf --no-merge-callchains has them. perf 7.x's
        merge takes a deferred sample's deltas when its stack arrives, after later samples
        stored theirs: its period then wraps below zero (u64 -30 for a drop of 30, perf 7.2.13).
        A single counter without PERF_FORMAT_ID (perf record always sets it) belongs to the
        sample's own event."""
        stats = self.report.extra.get("sample_read")
        if stats is None:
            stats = self.report.extra["sample_read"] = {
                "records": 0, "values": 0, "samples": 0, "zero_period": 0, "unknown_id": 0}
        stats["records"] += 1
        attr = ent.attr
        per_thread = bool(attr.inherit and attr.sample_type & C.PERF_SAMPLE_TID)
        by_id, last = self.perf.evlist.by_id, self.read_last
        out = []
        for value, vid, _lost in p.read.values:
            stats["values"] += 1
            if vid is None and not p.read.group:
                member, key = ent, ("event", ent.index)
            else:
                member, key = by_id.get(vid), vid
            if member is None:
                stats["unknown_id"] += 1
                continue
            if per_thread:
                key = (key, p.tid)
            period = (value - last.get(key, 0)) & C.U64
            last[key] = value
            if not period:
                stats["zero_period"] += 1
                continue
            out.append((member, period))
        stats["samples"] += len(out)
        return out

    def _deferred(self, rec):
        perf = self.perf
        ent = perf.evlist.for_trailer(rec.data)
        trailer = ent.layout.parse_trailer(rec.data) if ent else {}
        body_end = self._body_end(rec)
        layout = R.deferred_layout(rec.data, perf.endian, body_end)
        if layout != self.layout:
            # a size that fits neither layout: the file's (else the cookie one) says what is wrong
            layout = self._layout(layout, "record") if layout else (self.layout or R.DEFERRED_COOKIE)
        d = R.parse_deferred(rec.data, perf.endian, body_end, layout)
        frames, dropped = user_frames(d.ips)
        tid = trailer.get("tid")
        if tid is None:
            self.report.extra["deferred_without_tid"] = self.report.extra.get("deferred_without_tid", 0) + 1
            return
        self.stitcher.deferred(DeferredStack(tid, trailer.get("pid"), d.cookie, trailer.get("time"),
                                             frames, dropped))
        self._drain()

    def _layout(self, layout, what):
        """The first deferred chain or record sets the file's layout; the other one later is damage."""
        if self.layout is None:
            self.layout = layout
            if layout == R.DEFERRED_NO_COOKIE:
                self.stitcher.use_task_order(requeued_stacks(self.perf.evlist.entries), self.watch)
        elif layout != self.layout:
            raise ValueError("deferred %s in the %s layout, but this file's are in the %s layout"
                             % (what, layout, self.layout))
        return layout

    # -- ordered output -----------------------------------------------------------------------
    def _resolved(self, s):
        """Called the moment a sample's outcome is known: names taken now see the maps as they
        were when its user stack was taken, as perf's own merge does."""
        if self.boundaries is not None and s.outcome == STITCHED and s.chosen:
            self._across(s)
        if self.on_resolved is not None and s.chosen:
            self.on_resolved(s)

    def _across(self, s):
        """Count a sample stitched with a stack from a later file of a sequence: taken at or
        before the last time of a file, its stack after it (recording.Sequence.boundaries)."""
        if s.time is None or s.stack_time is None:
            return
        for b in self.boundaries:
            if s.time <= b < s.stack_time:
                self.report.extra["stitched_across_files"] += 1
                return

    def _push(self, rec):
        if not self.in_order:
            return
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
                if head.chosen:
                    out.sample(head)
            else:
                fifo.popleft()
                out.record(head)
