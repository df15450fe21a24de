"""The stitcher: give each deferred sample the user stack of its own kernel entry, or a reason.

Feed it time-ordered events — ``sample``, ``deferred``, ``exit``, ``lost``, then ``finish`` — and
every sample comes back exactly once through ``sink(sample)``: stitched, passed, or unmatched.

The cookie rules, for one task T (time runs to the right):

    kernel entry A (cookie A)                   kernel entry B (cookie B)
    s1 s2 s3 ─ return ─> stack(A) s4 ─ user ─>  s5 s6 ─ return ─> stack(B)
    │  │  │               │       │             │  │               │
    └──┴──┴── pending ────┘       │             └──┴── pending ────┘
       stitched with stack(A)     │                stitched with stack(B)
                                  └ cookie A, after stack(A) was written: it still names
                                    entry A, so stack(A) is its stack ("stitched_after_stack")

    If stack(A) is lost (ring buffer full), s1..s3 are still pending when stack(B) arrives:
    T has been back in user space since, so they can never be stitched -> "deferred-lost"
    ("-after-lost-records" when LOST records fell in between). Never attach by tid alone.

An exiting task still writes the stack of its last kernel entry, *after* its EXIT record
(the unwind runs as task work in do_exit: seen 14 us after EXIT in the syswide capture). So
EXIT only starts a grace period (``exit_grace`` ns of stream time); samples still pending when
it ends, or when the tid is reused, are "task-exited".

Also: end of input -> "stream-ended"; a stack that served no sample -> counted as orphan; a
second stack with the same (tid, cookie) serves nothing again (duplicate). Memory is bounded by
``max_pending``: past it the oldest pending sample is given up as "evicted".
"""
from collections import deque

from .model import (DEFERRED_LOST, DEFERRED_LOST_AFTER_LOST, EVICTED, PASSED, STITCHED,
                    STREAM_ENDED, TASK_EXITED, UNMATCHED)
from .report import StitchReport

DEFAULT_MAX_PENDING = 200_000         # ~120 MB of waiting samples at most
DEFAULT_EXIT_GRACE = 1_000_000_000     # ns of stream time a task's stack may follow its EXIT
U64_MAX = (1 << 64) - 1                 # counters saturate there, as the C engine's u64 do


class _Stack:
    __slots__ = ("cookie", "frames", "time", "served")

    def __init__(self, cookie, frames, time):
        self.cookie, self.frames, self.time, self.served = cookie, frames, time, 0


class Stitcher:
    def __init__(self, sink, max_pending=DEFAULT_MAX_PENDING, report=None,
                 exit_grace=DEFAULT_EXIT_GRACE):
        self.sink = sink
        self.exit_grace = exit_grace
        self.exited = deque()      # (exit time, tid) of tasks in their grace period
        self.max_pending = max_pending
        self.report = report if report is not None else StitchReport()
        self.pending = {}          # tid -> deque of samples waiting, oldest first
        self.npending = 0
        self.stacks = {}           # tid -> _Stack of its latest kernel entry
        self.lost_seq = 0          # LOST/LOST_SAMPLES records seen so far
        self._order = deque()      # pending samples oldest first, for eviction (resolved ones skipped)

    # -- events -------------------------------------------------------------------------------
    def sample(self, s):
        rep = self.report
        rep.samples += 1
        if self.exited:
            self._expire(s.time)
        if s.cookie is None:
            s.outcome = PASSED
            self._emit(s)
            return
        st = self.stacks.get(s.tid)
        if st is not None and st.cookie == s.cookie:
            s.after_stack = True
            st.served += 1
            self._stitch(s, st)
            return
        s.lost_seq = self.lost_seq
        q = self.pending.get(s.tid)
        if q is None:
            q = self.pending[s.tid] = deque()
        q.append(s)
        order = self._order
        order.append(s)
        self.npending += 1
        if len(order) > 2 * self.npending + 4096:     # drop resolved entries: amortized O(1)
            self._order = deque(x for x in order if x.outcome is None)
        if self.npending > rep.max_pending:
            rep.max_pending = self.npending
        if self.npending > self.max_pending:
            self.evict_oldest()

    def deferred(self, d):
        rep = self.report
        rep.deferred_records += 1
        rep.dropped_frames += d.dropped
        if self.exited:
            self._expire(d.time)
        prev = self.stacks.get(d.tid)
        if prev is not None and prev.cookie == d.cookie:
            rep.duplicate_deferred += 1     # same entry re-requested: it has served already
            return
        if prev is not None:
            self._retire(d.tid, prev)
        st = self.stacks[d.tid] = _Stack(d.cookie, d.frames, d.time)
        q = self.pending.pop(d.tid, None)
        if not q:
            return
        self.npending -= len(q)
        for s in q:
            if s.cookie == d.cookie:
                st.served += 1
                self._stitch(s, st)
            else:
                self._unmatched(s, DEFERRED_LOST_AFTER_LOST if self.lost_seq > s.lost_seq
                                else DEFERRED_LOST)

    def exit(self, tid, time=None):
        """EXIT of a task: its last stack may still come (see above); a grace period starts."""
        if time is None or not self.exit_grace:
            self._exited(tid)
        else:
            self.exited.append((time, tid))

    def reuse(self, tid):
        """A new task takes this tid (FORK): what the old one left pending is given up."""
        for i, (_t, old) in enumerate(self.exited):
            if old == tid:
                del self.exited[i]
                self._exited(tid)
                return

    def _expire(self, now):
        if now is None:
            return
        limit = now - self.exit_grace
        ex = self.exited
        while ex and ex[0][0] <= limit:
            self._exited(ex.popleft()[1])

    def _exited(self, tid):
        q = self.pending.pop(tid, None)
        if q:
            self.npending -= len(q)
            for s in q:
                self._unmatched(s, TASK_EXITED)
        st = self.stacks.pop(tid, None)
        if st is not None:
            self._retire(tid, st)

    def lost(self, records=1, events=0):
        """LOST records; ``events`` is the kernel's u64 count, and the total saturates at 2^64-1
        (a damaged count must not make the sum wrap, nor outgrow the u64 the C engine keeps)."""
        self.lost_seq += 1
        self.report.lost_records += records
        self.report.lost_events = min(self.report.lost_events + events, U64_MAX)

    def finish(self):
        while self.exited:
            self._exited(self.exited.popleft()[1])
        for tid, q in self.pending.items():
            for s in q:
                self._unmatched(s, STREAM_ENDED)
        self.pending.clear()
        self.npending = 0
        self._order.clear()
        for tid, st in self.stacks.items():
            self._retire(tid, st)
        self.stacks.clear()
        return self.report

    def reject(self, s, reason):
        """Count a sample that cannot even wait for a stack (e.g. it carries no tid)."""
        self.report.samples += 1
        self._unmatched(s, reason)

    def evict_oldest(self):
        """Give up the oldest pending sample (memory bound); False when nothing is pending."""
        order = self._order
        while order and order[0].outcome is not None:
            order.popleft()
        if not order:
            return False
        s = order.popleft()
        q = self.pending[s.tid]
        q.popleft()                 # per-task queues are oldest first too
        if not q:
            del self.pending[s.tid]
        self.npending -= 1
        self._unmatched(s, EVICTED)
        return True

    # -- outcomes -----------------------------------------------------------------------------
    def _stitch(self, s, st):
        s.outcome = STITCHED
        s.user = st.frames
        self._emit(s)

    def _unmatched(self, s, reason):
        s.outcome = UNMATCHED
        s.reason = reason
        self._emit(s)

    def _emit(self, s):
        self.report.count(s)
        self.sink(s)

    def _retire(self, tid, st):
        if st.served == 0:
            self.report.orphan(st.time, tid, st.cookie)
