"""Time order from FINISHED_ROUND rounds, as perf's ordered-events does, with bounded memory.

perf record drains one ring buffer per CPU, so records arrive in per-CPU runs, not in time
order. After draining every buffer once it writes FINISHED_ROUND, and promises: nothing written
after a round ends is older than what was written before the *previous* round ended.

        round N-1            round N              round N+1
    cpu0: 1 2 4          cpu0: 5 7 9          cpu0: 10 ...
    cpu1: 3 6  <- max 6  cpu1: 8 11 <- max 11 cpu1: 12 ...
                  FR  ^                FR  ^
                      |                    when round N ends, flush every record with
                      |                    time <= 6 (the max seen when round N-1 ended):
                      |                    1 2 3 4 5 6; 7 8 9 11 wait for the next round.

So at each FINISHED_ROUND we emit, in time order, the queued records up to ``next_flush`` and
then set ``next_flush`` to the largest time seen so far (session.c process_finished_round →
ordered_events__flush(OE_FLUSH__ROUND)). Memory: at most two rounds of records. Without any
FINISHED_ROUND the queue simply holds everything until the end: a full sort.

Records without a time (perf's own user records, kernel records without sample_id_all) are not
queued: like perf, we pass them on at once. Equal times keep their file order.

A file without rounds (or with huge ones) would make the queue hold everything; past
``max_queued`` records the oldest half is flushed, as perf's ordered-events does when it
reaches its memory limit (OE_FLUSH__HALF), and counted in ``forced_flushes``.
"""
import heapq

from ..abi import consts as C
from ..errors import FormatError


class OrderStats:
    """What the sorter saw: rounds, and records older than an already flushed time."""

    __slots__ = ("rounds", "unordered", "max_queued", "forced_flushes")

    def __init__(self):
        self.rounds = self.unordered = self.max_queued = self.forced_flushes = 0


DEFAULT_MAX_QUEUED = 2_000_000


def ordered(records, time_of, stats=None, max_queued=DEFAULT_MAX_QUEUED):
    """Yield ``records`` in time order under the FINISHED_ROUND rule (see the module docstring).

    ``time_of(rec)`` gives a record's timestamp or None. FINISHED_ROUND records themselves are
    yielded right after the flush they cause. When ``records`` raises FormatError (damage),
    what is queued is yielded first, in time order, then the error.
    """
    stats = stats if stats is not None else OrderStats()
    heap = []
    push, pop = heapq.heappush, heapq.heappop
    try:
        yield from _rounds(records, time_of, stats, max_queued, heap, push, pop)
    except FormatError:
        while heap:               # damage ahead: what was read before it is still delivered
            yield pop(heap)[2]
        raise
    while heap:
        yield pop(heap)[2]


def _rounds(records, time_of, stats, max_queued, heap, push, pop):
    """The body of ordered(): the heap is the caller's, so that damage can flush it."""
    seq = 0
    next_flush = None        # flush limit set when the previous round ended
    max_time = 0
    last_flushed = 0
    for rec in records:
        if rec.type == C.PERF_RECORD_FINISHED_ROUND:
            stats.rounds += 1
            if next_flush is not None:
                while heap and heap[0][0] <= next_flush:
                    last_flushed = heap[0][0]
                    yield pop(heap)[2]
            next_flush = max_time
            yield rec
            continue
        t = time_of(rec)
        if t is None:
            yield rec
            continue
        if t < last_flushed:
            stats.unordered += 1      # perf warns "Timestamp below last timeslice flush"
        if t > max_time:
            max_time = t
        push(heap, (t, seq, rec))
        seq += 1
        if len(heap) > stats.max_queued:
            stats.max_queued = len(heap)
        if len(heap) > max_queued:
            stats.forced_flushes += 1
            for _ in range(len(heap) // 2):
                last_flushed = heap[0][0]
                yield pop(heap)[2]
