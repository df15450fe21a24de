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

Without cookies (the pre-cookie layout; the feeder calls ``use_task_order()``) only the order of
one task's events can prove which stack is a sample's, and the stitcher never guesses:

    kernel entry A              kernel entry B
    s1 s2 ─ return ─> stack(A) s3 ─ user: u ─>  s4 ─ return ─> stack(B)
    └──┴─ pending ──┘          │          └─ pending ──┴────────┘
       the next stack of T     │             (u, a sample taken in user mode, proves that T
                               │              left entry A: what follows waits for the next stack)
                               └ entry A after its stack, or entry B before its own: its stack is
                                 stack(A) or the next one. Stitched when the two are the same
                                 frames (either way, that is its stack), else unmatched:
                                 "ambiguous-no-cookie" -- except the last sample of T before
                                 stack(B), which is B's: a stack is written only because a
                                 sample of T asked for it (before the cookie: perf's task work,
                                 queued by deferred_request() for the event that sampled), and
                                 a sample asking after its entry's stack was written either gets
                                 the same frames again (queued anew, run before the return) or
                                 none (6.19: unwind_deferred_request() keeps the entry's bit
                                 set until the return). So a sample after stack(A) asked for
                                 stack(B), and the samples of B's entry come last.

    All of that holds only if none of T's records between its last sight in user space (u, or
    its FORK; the sample itself for a sample taken in user mode) and the stack was lost.
    A LOST record comes late, stamped when its buffer took a record again (up to
    280 ms after the loss began, in the captures), so with a ``proof`` (perfdata/buffers.py:
    each buffer's loss intervals, the LOST records still to come, how far its records have been
    seen) every stitch waits until no loss still to be revealed can meet [since, stack]:

        since (u)     s            stack            the next record of each buffer that may
        |─────────────┼────────────┤ · · · · · · · ·|  still reveal a loss: stitched when no loss
                                                       interval meets [since, stack], else unmatched:
        "lost-records-no-cookie" (report: held back, by which part the loss met). Without a proof
    (the feeder's choice for a file with no loss at all), what is pending at a LOST record, and
    what comes before its task is seen in user space again, is "lost-records-no-cookie" (a loss
    revealed only after the stack would get through that way).

    What the kernels' code proves, and why these rules go no further:
    - Stacks per event or per task. Before the cookie patch (v5-v13 of "perf: Support deferred
      user callchains", 2025: kernel/events/core.c deferred_request(), perf_event_callchain_
      deferred()) each *task* event has its own task work and writes its own record, with its
      own sample_id, and queues the work again when sampled after it ran: there the next stack of
      a task is always its samples' (test_nocookie.py's per-event streams). That series' per-CPU
      events (unwind_deferred_request(): one request per task, the record to the first event of
      the CPU) and 7.x (perf_unwind_deferred_callback() -> perf_iterate_sb(): one record per entry
      to the defer_output event; the entry's bit stays set until the return, so a later sample of
      the entry asks for nothing) write one stack per entry. The rules above hold for both:
      per task, whichever event wrote the stack. Where the attrs show the series' task events
      (no defer_output, without which 7.x writes no record at all; every deferring attr disabled
      until exec, which enables a task's own events only: perf_event_enable_on_exec()), the
      feeder says ``requeued`` and no sample is in doubt after a stack. (So a file rewritten
      from a 7.x capture must keep its attrs as recorded, as tests/nocookie.py does: without
      defer_output its 7.x stacks would be taken for the series'.)
    - Only a sample taken in user mode proves T left the entry that wrote its stack. Task work,
      the unwind included, also runs inside system calls (io_uring_enter's io_run_task_work(),
      KVM_RUN's xfer_to_guest_mode_handle_work(), execve's io_uring_task_cancel()), which then
      go on: so MMAP/COMM(exec) records, the FORK of an io-wq worker, a kernel callchain or a
      time after the stack may all still be the same entry's.
"""
from collections import deque

from .model import (AMBIGUOUS_NO_COOKIE, DEFERRED_LOST, DEFERRED_LOST_AFTER_LOST, EVICTED,
                    LOST_NO_COOKIE, PASSED, STITCHED, STREAM_ENDED, TASK_EXITED, UNMATCHED)
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
        self.task_order = False    # match by task order (no cookies): use_task_order()
        self.requeued = False      # ... of stacks queued again after they ran (no doubt after one)
        self.stale = {}            # tid -> frames of the stack it wrote, not seen in user space since
        self.user_seq = {}         # tid -> lost_seq when it was last seen in user space (or forked)
        self.latest = {}           # tid -> its latest deferred sample (whatever became of it)
        self.user_time = {}        # tid -> when it was last seen in user space (or born)
        self.proof = None          # what the file proves about losses: use_task_order()
        self.parked = deque()      # (sample, stack) stitched once the proof is there, stack order
        self.held_back = {}        # reason -> samples unmatched for want of proof

    def use_task_order(self, requeued=False, proof=None):
        """Match by task order, for stacks that carry no cookie (see above). The feeder calls it
        before its first deferred sample. ``requeued``: the stacks are the pre-cookie series'
        task events' own, whose work is queued again when sampled after it ran (see above): the
        next stack of a task is then its samples' whatever came before, so none is in doubt.
        ``proof``: a perfdata.buffers.LossWatch (or anything with its ``verdict``/``advanced``)."""
        self.task_order = True
        self.proof = proof
        self.requeued = requeued
        self.report.deferred_layout = "no-cookie"

    # -- events -------------------------------------------------------------------------------
    def _arrived(self, s):
        """Count a sample in: the report's samples are the chosen ones (selection.py)."""
        if s.chosen:
            self.report.samples += 1
        else:
            self.report.not_chosen += 1

    def sample(self, s):
        self._arrived(s)
        if self.exited:
            self._expire(s.time)
        if self.task_order:
            self._sample_in_order(s)
            return
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
        self._wait(s)

    def _wait(self, s):
        rep = self.report
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
        if self.task_order:
            self._deferred_in_order(d)
            return
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
                self._unmatched(s, self.lost_reason(s, d))

    def lost_reason(self, s, d):
        """Why pending sample s will never get its stack, now that stack d of a later kernel
        entry of its task came: "deferred-lost-after-lost-records" when lost records were
        reported while it waited, else "deferred-lost". A front end that knows where and when
        records were lost may narrow it (tracecmd/reader.py: per CPU and time)."""
        return DEFERRED_LOST_AFTER_LOST if self.lost_seq > s.lost_seq else DEFERRED_LOST

    # -- matching by task order ---------------------------------------------------------------
    def _sample_in_order(self, s):
        tid = s.tid
        if s.cookie is not None:
            self.latest[tid] = s
        if s.user_mode:             # T left its last kernel entry: what follows is a new one
            self.stale.pop(tid, None)
            self.user_seq[tid] = self.lost_seq
            self.user_time[tid] = s.time
        if s.cookie is None:
            s.outcome = PASSED
            self._emit(s)
        elif s.user_mode:
            s.since = s.time
            self._wait(s)
        elif self.proof is None and self.user_seq.get(tid, 0) < self.lost_seq:
            self._unmatched(s, LOST_NO_COOKIE)
        else:
            s.doubt = None if self.requeued else self.stale.get(tid)
            s.since = self.user_time.get(tid, -1)   # requeued too: a rewrite cannot requeue a lost stack
            self._wait(s)

    def _deferred_in_order(self, d):
        self.stale[d.tid] = d.frames
        q = self.pending.pop(d.tid, None)
        if not q:
            self.report.orphan(d.time, d.tid, None)
            return
        self.npending -= len(q)
        st = _Stack(None, d.frames, d.time)
        last = self.latest.get(d.tid)
        for s in q:
            if s.doubt is None or s.doubt == d.frames or s is last:
                if self.proof is None:
                    self._stitch(s, st)
                else:
                    self._prove(s, st)
            else:
                self._unmatched(s, AMBIGUOUS_NO_COOKIE)

    def _prove(self, s, st):
        """Stitch s to st if the proof allows it, hold it back if it cannot, else park it."""
        v = self.proof.verdict(s.since, s.time, st.time)
        if v is None:
            self.parked.append((s, st))
            self.npending += 1
        elif v is True:
            self._stitch(s, st)
        else:
            self.held_back[v] = self.held_back.get(v, 0) + 1
            self._unmatched(s, LOST_NO_COOKIE)

    def proof_advanced(self):
        """The proof knows more: decide the parked samples it now can (oldest stack first)."""
        parked = self.parked
        while parked:
            s, st = parked[0]
            if s.outcome is None:
                v = self.proof.verdict(s.since, s.time, st.time)
                if v is None:
                    return
                self.npending -= 1
                parked.popleft()
                if v is True:
                    self._stitch(s, st)
                else:
                    self.held_back[v] = self.held_back.get(v, 0) + 1
                    self._unmatched(s, LOST_NO_COOKIE)
            else:
                parked.popleft()

    def _forget(self, tid):
        self.stale.pop(tid, None)
        self.latest.pop(tid, None)
        self.user_seq.pop(tid, None)
        self.user_time.pop(tid, None)

    # -- tasks and losses -------------------------------------------------------------------
    def exit(self, tid, time=None):
        """EXIT of a task: its last stack may still come (see above); a grace period starts."""
        if time is None or not self.exit_grace:
            self._exited(tid)
        else:
            self.exited.append((time, tid))

    def reuse(self, tid, time=None):
        """A new task takes this tid (FORK, at ``time``): what the old one left pending is given up."""
        if self.task_order:         # a task born now owes no stack from before
            self.stale.pop(tid, None)
            self.user_seq[tid] = self.lost_seq
            self.user_time[tid] = -1 if time is None else time
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
        if self.task_order:
            self._forget(tid)

    def lost(self, records=1, events=0):
        """LOST records; ``events`` is the kernel's u64 count, and the total saturates at 2^64-1
        (a damaged count must not make the sum wrap, nor outgrow the u64 the C engine keeps)."""
        self.lost_seq += 1
        self.report.lost_records += records
        self.report.lost_events = min(self.report.lost_events + events, U64_MAX)
        if self.task_order and self.proof is None and self.pending:   # the next stack may not be theirs
            for q in self.pending.values():
                for s in q:
                    self._unmatched(s, LOST_NO_COOKIE)
            self.pending.clear()
            self.npending = 0

    def finish(self):
        if self.parked:
            self.proof_advanced()
            for s, _st in self.parked:      # the input stopped before the proof (damage)
                if s.outcome is None:
                    self.npending -= 1
                    self._unmatched(s, STREAM_ENDED)
            self.parked.clear()
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
        self._arrived(s)
        if self.task_order and s.tid is not None:
            self.latest[s.tid] = s      # it may have asked for the next stack: that stack's last
        self._unmatched(s, reason)

    def evict_oldest(self):
        """Give up the oldest pending sample (memory bound); False when nothing is pending."""
        order = self._order
        while order and order[0].outcome is not None:
            order.popleft()
        if not order:
            return False
        s = order.popleft()
        q = self.pending.get(s.tid)
        if q and q[0] is s:
            q.popleft()             # per-task queues are oldest first too
            if not q:
                del self.pending[s.tid]
        # else: parked (its stack came, the proof not yet): skipped there once resolved
        self.npending -= 1
        self._unmatched(s, EVICTED)
        return True

    # -- outcomes -----------------------------------------------------------------------------
    def _stitch(self, s, st):
        s.outcome = STITCHED
        s.user, s.stack_time = st.frames, st.time
        self._emit(s)

    def _unmatched(self, s, reason):
        s.outcome = UNMATCHED
        s.reason = reason
        self._emit(s)

    def _emit(self, s):
        if s.chosen:
            self.report.count(s)
        self.sink(s)

    def _retire(self, tid, st):
        if st.served == 0:
            self.report.orphan(st.time, tid, st.cookie)
