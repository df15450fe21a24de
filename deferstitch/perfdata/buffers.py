"""Ring buffers and their losses: what a perf.data proves about when each buffer lost records.

Files without cookies are matched by task order (stitcher.py), which is only right when none of
the task's records in between was lost. A LOST record says little by itself: the kernel writes it
(perf_output_begin(), kernel/events/ring_buffer.c) into the buffer that dropped records, before
the next record that buffer accepts, stamped with that moment. So the loss lies between that
buffer's previous record and the LOST's time, and a record of a buffer with no LOST before it
proves that buffer dropped nothing before it:

    buffer cpu1 (its records, in the order written):
        ... s(9.0) ]  dropped: s s stack(T) s  [ LOST(12.4) s(12.4) ... s(15.0) ...
                 lo ^-------- loss interval -------^ hi            ^ horizon: nothing of
                                                                     cpu1 lost before it but that

perf record (one thread, the default) drains each ring buffer once per round, in the order of
its mmaps (one per CPU, for per-task `perf record -- CMD` too: inherited events are opened per
CPU), and writes each buffer's new data as one piece, then FINISHED_ROUND:

    file:  | cpu0: 1 3 5 8 | cpu1: 2 4 L 7 | ROUND | cpu0: 9 11 | cpu1: 10 12 | ROUND
                          ^ time goes back: a new piece (a later buffer) starts

Which buffer a record came from: its CPU where the records carry one (PERF_SAMPLE_CPU: -a);
its id where they carry one (PERF_SAMPLE_ID or IDENTIFIER: several events), and always that of
a LOST record (one id per CPU: ID_INDEX, else the order of each attr's ids). Otherwise the
pieces tell, where the times do: a piece is in time order but for records written from task
context (deferred stacks, COMM, EXIT, ...), whose time may be taken before an interrupt whose
sample then comes first (seen up to 0.44 ms in the captures, under qemu TCG: SLACK covers it).
A sample of an interrupt-context event (hardware events, cpu-clock, task-clock) is written in
the interrupt that stamped it, so an earlier record of the round with a later time is in an
earlier piece. A record whose buffer the round does not pin down moves no horizon.

A stitch over [a, b] (stitcher.py: from the time its task was last seen in user space, or the
sample's own, to its stack) is proven when no loss interval [lo - SLACK, hi] meets [a, b] and
no loss still to be revealed can:

    - a file read ahead (read_ahead(): every LOST record, and perf's final lost counts, the
      LOST_SAMPLES it writes per event and CPU) names the buffers with a LOST still to come
      after a, and those that lost more than their LOST records say (a loss no record
      followed): only those must have shown a record after b + SLACK (their loss then lies
      after it);
    - standard input, or a file not read to its end: every buffer must have.

At the end of the file every horizon is passed; a loss that no record of its buffer followed
gets no LOST record and, without perf's final counts, the file cannot show it.
"""
import struct
from bisect import bisect_left, insort

from ..abi import consts as C
from ..abi import records as R
from ..errors import FormatError

SLACK = 2_000_000           # ns: a task-context record's time may precede its write by this much
MAX_CHUNK = 50_000          # records of one round examined at once (memory), ranges carried over
_IRQ_SOFTWARE = (0, 1)      # PERF_COUNT_SW_CPU_CLOCK, PERF_COUNT_SW_TASK_CLOCK: hrtimer interrupts
_IRQ_TYPES = (0, 3, 4)      # PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_RAW: PMU interrupts
_LOST_SAMPLES_BPF = 1 << 15 # PERF_RECORD_MISC_LOST_SAMPLES_BPF: dropped by a BPF filter, not lost

STACK_MAY_BE_LOST = "stack-may-be-lost"           # a loss between the sample and its stack
EARLIER_STACK_MAY_BE_LOST = "earlier-stack-may-be-lost"   # ... between its task's last sight in
                                                          # user space and the sample


def _interrupt_event(attr):
    return attr.type in _IRQ_TYPES or (attr.type == C.PERF_TYPE_SOFTWARE and attr.config in _IRQ_SOFTWARE)


def _parsed(parse, rec, *args):
    """``parse(rec.data, *args)``, or None for a record too damaged for it: the feed reports
    that damage with its offset when the record reaches it; here it only proves nothing."""
    try:
        return parse(rec.data, *args)
    except (ValueError, struct.error):
        return None


def _lost_count(rec, e):
    lost = _parsed(R.parse_lost, rec, e)
    return lost.lost if lost else 0


def _same_cpu_maps(perf, ents):
    """Whether the n-th id of every attr is of one buffer: each attr has an id per CPU of its
    CPU map (per thread too), in order, so only when all attrs have one map. They do not when
    their numbers of ids differ, nor on a hybrid machine (HYBRID_TOPOLOGY) where an event of a
    core PMU is opened on that PMU's CPUs only (software events and tracepoints on all)."""
    with_ids = [e for e in ents if e.ids]
    if len({len(e.ids) for e in with_ids}) > 1:
        return False
    return C.HEADER_HYBRID_TOPOLOGY not in perf.features or all(
        e.attr.type in (C.PERF_TYPE_SOFTWARE, C.PERF_TYPE_TRACEPOINT) for e in with_ids)


class LossWatch:
    """Reads records in file order (``records()`` wraps the reader's generator, one round late
    at most) and keeps each buffer's loss intervals and horizon; ``verdict()`` answers for a
    stitch. ``hazards``: (hi, lo) of every loss, sorted."""

    def __init__(self, perf, ahead=None):
        self.perf = perf
        self.ahead = ahead         # the file's LOST records read ahead (read_ahead()), or None
        self.hazards = []
        self.horizon = {}          # buffer -> time of its latest record pinned to it
        self.buffers = None        # every buffer that may hold records (None: from the CPUs seen)
        self.ended = False
        self.lost_records = {}     # buffer (None: unknown) -> what its LOST records say was lost
        self.lost_samples = []     # (sample id or None, count) of perf's LOST_SAMPLES at the end
        self.advanced = 0          # bumped whenever a horizon moved or a loss was added
        self._configured = False

    # -- configuration, once the attrs are known ----------------------------------------------
    def _configure(self):
        ev = self.perf.evlist
        ents = ev.entries
        self.by_cpu = bool(ents) and all(
            e.attr.sample_type & C.PERF_SAMPLE_CPU and e.attr.sample_id_all for e in ents)
        self.buffer_of_id = {}
        if not self.by_cpu:
            cpus = {x.id: x.cpu for x in ev.index_entries}
            if len(set(cpus.values())) > 1:
                self.buffer_of_id = cpus
            elif _same_cpu_maps(self.perf, ents):   # no ID_INDEX, or per-thread mmaps: the
                for e in ents:                        # order of each attr's ids
                    for n, i in enumerate(e.ids):
                        self.buffer_of_id[i] = n
            order = sorted(set(self.buffer_of_id.values()))
            self.rank = {b: n for n, b in enumerate(order)}
            self.buffers = set(order)
            self.nbuf = len(order)
        self._configured = True

    # -- the stream -----------------------------------------------------------------------------
    def records(self, records):
        """Yield ``records`` unchanged, each round after it was examined (see the docstring)."""
        chunk = []
        carry = [0]                # the lowest buffer rank the round's next record may have
        try:
            yield from self._rounds(records, chunk, carry)
        except FormatError:        # damage: what was read before it is still delivered
            self._round(chunk, carry)
            yield from chunk
            raise
        self._round(chunk, carry)
        self._unrevealed()
        self.ended = True
        self.advanced += 1
        yield from chunk

    def _rounds(self, records, chunk, carry):
        for rec in records:
            if rec.type == C.PERF_RECORD_FINISHED_ROUND:
                self._round(chunk, carry)
                yield from chunk
                chunk.clear()
                carry[0] = 0
                yield rec
                continue
            chunk.append(rec)
            if len(chunk) >= MAX_CHUNK:
                self._round(chunk, carry)
                yield from chunk
                chunk.clear()

    def _unrevealed(self):
        """At the end: a loss no LOST record revealed (see _excess()) holds back what came after
        its buffer's last record."""
        for b in self._excess():
            if b is None:
                last = [self.horizon.get(x) for x in (self.buffers or self.horizon)]
                lo = -1 if not last or None in last else min(last) - SLACK
            else:
                lo = self.horizon[b] - SLACK if b in self.horizon else -1
            insort(self.hazards, (float("inf"), lo))
            self.advanced += 1

    def _excess(self):
        """The buffers that lost more than their LOST records said (None: one not known).
        perf record reads each event's count of lost records at the end (PERF_FORMAT_LOST) and
        writes it as LOST_SAMPLES (record__read_lost_samples(): per event and CPU, in that
        order, counts above 0 only). Where the counts cannot be told apart by buffer, the
        totals decide."""
        ids = [i for e in self.perf.evlist.entries for i in e.ids]
        counts = self.lost_samples
        if any(i is None for i, _n in counts) and len(counts) == len(ids):
            counts = [(i, n) for i, (_x, n) in zip(ids, counts)]     # each (event, CPU) once
        by_buf = {}
        for i, n in counts:
            b = self._buffer_of_sample_id(i)
            by_buf[b] = by_buf.get(b, 0) + n
        if None in by_buf or None in self.lost_records:
            return [None] if sum(by_buf.values()) > sum(self.lost_records.values()) else []
        return [b for b, n in by_buf.items() if n > self.lost_records.get(b, 0)]

    def _lost_buffer(self, rec):
        """The buffer a LOST record speaks for: its CPU, else its id's (None: not known)."""
        if self.by_cpu:
            ent = self.perf.evlist.for_trailer(rec.data)
            return (_parsed(ent.layout.parse_trailer, rec) or {}).get("cpu") if ent else None
        lost = _parsed(R.parse_lost, rec, self.perf.endian)
        return self.buffer_of_id.get(lost.id) if lost else None

    def _buffer_of_sample_id(self, i):
        if self.by_cpu:
            cpus = {x.id: x.cpu for x in self.perf.evlist.index_entries}
            return cpus.get(i)
        return self.buffer_of_id.get(i)

    def _round(self, chunk, carry):
        if not chunk:
            return
        if not self._configured:
            self._configure()
        for rec in chunk:
            if rec.type == C.PERF_RECORD_LOST_SAMPLES and not rec.misc & _LOST_SAMPLES_BPF:
                ls = _parsed(R.parse_lost_samples, rec, self.perf.endian)
                self.lost_samples.append((self._id_of(rec), ls.lost if ls else 1 << 64))
        if self.by_cpu:
            self._by_cpu(chunk)
        elif self.nbuf:
            self._by_piece(chunk, carry)
        else:                      # no sample ids at all: no buffer is known, each LOST's neither
            for rec in chunk:
                t = self.perf.evlist.time_of(rec)
                if rec.type == C.PERF_RECORD_LOST and t is not None:
                    self._loss(None, t, _lost_count(rec, self.perf.endian))

    def _by_cpu(self, chunk):
        ev = self.perf.evlist
        for rec in chunk:
            t = ev.time_of(rec)
            if t is None:
                continue
            if rec.type == C.PERF_RECORD_SAMPLE:
                ent = ev.for_sample(rec.data)
                p = _parsed(ent.layout.parse, rec) if ent else None
                cpu = p.cpu if p else None
            else:
                ent = ev.for_trailer(rec.data)
                cpu = (_parsed(ent.layout.parse_trailer, rec) or {}).get("cpu") if ent else None
            if rec.type == C.PERF_RECORD_LOST:     # no CPU: a buffer unknown, since the start
                self._loss(self._lost_buffer(rec), t, _lost_count(rec, self.perf.endian))
            if cpu is not None:
                self._seen(cpu, t)

    def _by_piece(self, chunk, carry):
        """Pin what the round's order proves: ranks [lo, hi] of each record's buffer."""
        ev, e = self.perf.evlist, self.perf.endian
        top = self.nbuf - 1
        times, pins, lo = [], [], []
        pairs = []                 # (k, i): record k is in an earlier buffer than record i
        broken = carry[0] is None  # an earlier chunk of this round was not the layout
        cur = 0 if broken else carry[0]
        maxt = None
        for i, rec in enumerate(chunk):
            t = ev.time_of(rec)
            times.append(t)
            pin = self.rank.get(self.buffer_of_id.get(self._id_of(rec)))
            if rec.type == C.PERF_RECORD_LOST:
                lost = _parsed(R.parse_lost, rec, e)
                b = self.buffer_of_id.get(lost.id) if lost else None
                pin = self.rank.get(b)
            elif rec.type == C.PERF_RECORD_SAMPLE and t is not None and maxt is not None and t < maxt:
                ent = ev.for_sample(rec.data)
                if ent is not None and _interrupt_event(ent.attr):
                    k = i - 1
                    while times[k] is None or times[k] <= t:
                        k -= 1
                    pairs.append((k, i))
                    cur = max(cur, lo[k] + 1)
            if pin is not None:
                cur = max(cur, pin)
            pins.append(pin)
            lo.append(cur)
            if t is not None and (maxt is None or t > maxt):
                maxt = t
        carry[0] = cur
        hi = [top] * len(chunk)
        limit = top
        by_k = {}
        for k, i in pairs:
            by_k.setdefault(k, []).append(i)
        for j in range(len(chunk) - 1, -1, -1):
            if pins[j] is not None:
                limit = min(limit, pins[j])
            hi[j] = limit
            for i in by_k.get(j, ()):
                limit = min(limit, hi[i] - 1)
                hi[j] = limit
        if broken or any(l > h for l, h in zip(lo, hi)):
            lo = [0] * len(chunk)          # not the layout described above: pin nothing but LOSTs,
            hi = [top] * len(chunk)
            carry[0] = None                # nor in the rest of the round (its bound means nothing)
        rank_to_buffer = {n: b for b, n in self.rank.items()}
        for rec, t, pin, l, h in zip(chunk, times, pins, lo, hi):
            if t is None:
                continue
            if rec.type == C.PERF_RECORD_LOST:     # an unknown id: a buffer unknown, since the start
                self._loss(rank_to_buffer.get(pin), t, _lost_count(rec, e))
            if l == h:
                self._seen(rank_to_buffer[l], t)

    def _id_of(self, rec):
        """The sample id a record carries (PERF_SAMPLE_ID or IDENTIFIER: one per CPU), or None."""
        ev, data = self.perf.evlist, rec.data
        if rec.type == C.PERF_RECORD_SAMPLE:
            ent = ev.for_sample(data)
            at = ent.layout.id_offset if ent else None
            if at is None or len(data) < at + 8:
                return None
            return ev.u64.unpack_from(data, at)[0]
        if rec.type >= C.PERF_RECORD_USER_TYPE_START:
            return None
        ent = ev.for_trailer(data)
        back = ent.layout.trailer_id_from_end if ent and ent.layout.trailer_names else None
        if back is None or len(data) < 8 + back:
            return None
        return ev.u64.unpack_from(data, len(data) - back)[0]

    def _loss(self, buf, t, n):
        self.lost_records[buf] = self.lost_records.get(buf, 0) + n
        if self.ahead is not None:
            self.ahead.reached(buf)
        lo = self.horizon.get(buf) if buf is not None else None
        insort(self.hazards, (t, -1 if lo is None else lo - SLACK))
        self.advanced += 1

    def _seen(self, buf, t):
        if self.buffers is not None and buf not in self.buffers:
            self.buffers.add(buf)
        if t > self.horizon.get(buf, -1):
            self.horizon[buf] = t
            self.advanced += 1

    # -- answers --------------------------------------------------------------------------------
    def seen_to(self):
        """The time up to which every buffer's losses have been seen (None: not yet any)."""
        if self.ended:
            return float("inf")
        if self.buffers is None:           # by CPU: the buffers seen so far (see docstring)
            return min(self.horizon.values()) if self.horizon else None
        if not self.horizon or len(self.horizon) < len(self.buffers):
            return None            # (no buffer known at all: not before the end)
        return min(self.horizon.values())

    def loss_between(self, a, b):
        """The (hi, lo) of a loss interval meeting [a, b], or None."""
        hz = self.hazards
        for n in range(bisect_left(hz, (a, -2)), len(hz)):
            hi, lo = hz[n]
            if lo <= b:
                return hz[n]
        return None

    def verdict(self, since, taken, stack):
        """Whether stitching a sample taken at ``taken`` to the stack written at ``stack`` is
        proven, its task last seen in user space at ``since``: True, a reason (why not), or None
        (not yet known: ask again when ``advanced`` changed). A stack without a time (its
        event's sample_id has no TIME) may have been written any time after the sample."""
        if stack is None:
            stack = float("inf")
        hit = self.loss_between(since, stack)
        if hit is not None:
            return STACK_MAY_BE_LOST if self.loss_between(taken, stack) else EARLIER_STACK_MAY_BE_LOST
        if self.ended:
            return True
        if self.ahead is None:
            seen = self.seen_to()
            return True if seen is not None and seen > stack + SLACK else None
        # with the LOST records known ahead, only a buffer with one still to come (or a loss
        # none revealed) can hold a loss that meets [since, stack]: from its horizon on
        for buf in self.ahead.pending_since(since):
            if self._horizon_of(buf) <= stack + SLACK:
                return None
        return True

    def _horizon_of(self, buf):
        if buf is not None:
            return self.horizon.get(buf, -1)
        known = self.buffers or self.horizon
        if not known or any(b not in self.horizon for b in known):
            return -1
        return min(self.horizon[b] for b in known)


class Ahead:
    """A file's LOST records in file order, per buffer, and the buffers that lost more than
    those say (_excess()): read before the stream, so that a buffer with no loss to come
    holds nothing back, however long it stays silent."""

    def __init__(self, times, excess):
        self.times = times                 # buffer -> times of its LOST records, file order
        self.excess = excess
        self.next = {b: 0 for b in times}  # buffer -> its LOST records the stream has reached
        self.tail_max = {b: _tail_max(ts) for b, ts in times.items()}
        self.losses = bool(times) or bool(excess)

    def reached(self, buf):
        if buf in self.next:
            self.next[buf] += 1

    def pending_since(self, since):
        """The buffers with a LOST still to come stamped at or after ``since``, or a loss none
        revealed."""
        out = [b for b, n in self.next.items() if n < len(self.times[b]) and self.tail_max[b][n] >= since]
        return out + [b for b in self.excess if b not in out]


def _tail_max(values):
    """[max(values[i:]) for each i], in one pass."""
    out, top = [], float("-inf")
    for v in reversed(values):
        top = max(top, v)
        out.append(top)
    return out[::-1]


def read_ahead(perf_path):
    """The LOST and LOST_SAMPLES records of the perf.data at ``perf_path``, read on a separate
    handle (header-size reads: what a loss-free file costs): an Ahead, or None when the file
    cannot be read to its end (the stream will say where; the watch then waits for each
    buffer's records instead)."""
    from .reader import PerfData
    try:
        with PerfData.open(perf_path) as perf:
            watch = LossWatch(perf)
            lost, counts = [], []
            for rec in perf.records():
                if rec.type == C.PERF_RECORD_LOST:
                    lost.append(rec)
                elif rec.type == C.PERF_RECORD_LOST_SAMPLES and not rec.misc & _LOST_SAMPLES_BPF:
                    counts.append(rec)
            if not lost and not counts:
                return Ahead({}, [])
            watch._configure()
            times = {}
            for rec in lost:
                b = watch._lost_buffer(rec)
                t = perf.evlist.time_of(rec)
                times.setdefault(b, []).append(-1 if t is None else t)
                watch.lost_records[b] = watch.lost_records.get(b, 0) + _lost_count(rec, perf.endian)
            for rec in counts:
                ls = _parsed(R.parse_lost_samples, rec, perf.endian)
                watch.lost_samples.append((watch._id_of(rec), ls.lost if ls else 1 << 64))
            excess = watch._excess() if counts else [None]   # no final counts: not known
            return Ahead(times, excess)
    except (FormatError, ValueError, struct.error, OSError):
        return None
