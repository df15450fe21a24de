"""Off-CPU intervals: where a task waits, as time, from its switch-outs and the evidence that it ran.

A ``sched_switch`` sample is taken as a task leaves the CPU; its stitched stack says where it
waits. The wait lasts until the task runs again, which the input shows in one of four ways; the
first of them in time order ends the interval (the feeder gives every event in time order):

    task T   switch-out s ─────── off the CPU ───────┐ runs ─ back in user space ─>
             │                                       │        │
             start                 NEXT_PID: a sched_switch naming T as next_pid (-a)
                                   SWITCH_IN: a switch-in record of T (--switch-events)
                                   USER_STACK: the time of s's own deferred stack, written as
                                     T went back to user space (per task, the common case);
                                     after the switch-in, by the rest of the system call
                                   SEEN: T's next sample or switch-out, or its exit: it ran
                                     before then (an upper bound; the last resort)

An interval never ended is counted by why (``UNENDED``): the input ended (``RECORDING_ENDED``),
or the switch-out was of a task already gone (``TASK_GONE``: the kernel gives a dying thread's
last switch-out tid -1). A switch-out of a task that was only preempted (still runnable) is not
a wait: it is counted as ``PREEMPTED`` and ends nothing but T's earlier interval, unless the
feeder asks to count preemptions too. So every switch-out is counted exactly once:

    switch_outs == sum(ended.values()) + sum(unended.values()) + preempted

Two ways to feed it. In time order with every sample's outcome final (the trace side): a
stitched switch-out's stack time is known at once and waits in a heap until stream time passes
it. Or as the input comes (the perf side: PerfFeed's ``arrived``), a switch-out before its
outcome, then ``resolved(s)`` when the stitcher gives it: that is the moment its deferred stack
came, so a wait still open ends there (USER_STACK), and a wait that ended earlier is handed on
then. Either way nothing is held for a wait but its own entry: memory follows the tasks off the
CPU and the samples still waiting for their stack, never the input's length.
The core knows no file format: the feeder decodes the tracepoint's fields.
"""
import heapq
from collections import Counter

from .model import STITCHED

NEXT_PID, SWITCH_IN, USER_STACK, SEEN = "next-pid", "switch-in", "user-stack", "task-seen"
ENDINGS = (NEXT_PID, SWITCH_IN, USER_STACK, SEEN)
RECORDING_ENDED, TASK_GONE = "recording-ended", "task-gone"
UNENDED = (RECORDING_ENDED, TASK_GONE)


class Interval:
    """One wait: the switch-out ``sample`` (its stack and outcome are the wait's), the task's
    ``state`` letter at the switch-out (S, D, ... or R for a preemption), ``start`` and ``end``
    in the input's ns, and ``ended`` by which evidence (ENDINGS) or why not (UNENDED)."""

    __slots__ = ("sample", "tid", "comm", "state", "start", "end", "ended")

    def __init__(self, sample, tid, comm, state, start):
        self.sample, self.tid, self.comm, self.state, self.start = sample, tid, comm, state, start
        self.end = self.ended = None

    @property
    def duration(self):
        """ns off the CPU, None for an interval never ended."""
        return None if self.end is None else self.end - self.start


class OffCpu:
    """Builds intervals from time-ordered calls and hands each, once ended (or given up at
    finish()), to ``emit(interval)``. ``preempted``: count preemptions as waits too."""

    def __init__(self, emit, preempted=False):
        self.emit, self.preempted = emit, preempted
        self.open = {}              # tid -> its Interval, while it is off the CPU
        self.deadlines = []         # heap of (stack time, serial, interval)
        self.serial = 0
        self.switch_outs = 0
        self.skipped_preempted = 0
        self.ended = Counter()      # ENDINGS -> intervals
        self.unended = Counter()    # UNENDED -> intervals
        self.ns = Counter()         # ENDINGS -> ns off the CPU they ended
        self.last = None            # the latest time given
        self.unresolved = {}        # id(sample) -> its wait, ended or not, its outcome to come

    # -- the feeder's calls, in time order ------------------------------------------------------
    def switch_out(self, s, state, comm=None):
        """``s``: a sched_switch Sample whose outcome is final (its stack), of the task leaving
        the CPU; ``state``: its prev_state as a letter ("R" when it was preempted)."""
        self.switch_outs += 1
        now = s.time
        self._advance(now)
        tid = s.tid
        if tid is None or tid < 0:          # a task already gone: nobody will run as it again
            iv = Interval(s, tid, comm, state, now)
            if s.outcome is None:
                self.unresolved[id(s)] = iv
            self._give_up(iv, TASK_GONE)
            return
        self.seen(tid, now)                 # it was running: its earlier wait is over
        if state == "R" and not self.preempted:
            self.skipped_preempted += 1
            return
        iv = self.open[tid] = Interval(s, tid, comm, state, now)
        if s.outcome is None:               # its outcome comes later: resolved(s)
            self.unresolved[id(s)] = iv
            return
        st = s.stack_time
        if s.outcome == STITCHED and st is not None and st > now:
            self.serial += 1
            heapq.heappush(self.deadlines, (st, self.serial, iv))

    def resolved(self, s):
        """The outcome of switch-out ``s`` is known: the moment its deferred stack came (or it
        was given up). Its wait, still open, ends at the stack's time; ended, it is handed on."""
        iv = self.unresolved.pop(id(s), None)
        if iv is None:
            return
        if iv.ended is not None:            # ended (or given up) before: hand it on now
            self.emit(iv)
        elif self.open.get(iv.tid) is iv and s.outcome == STITCHED and s.stack_time is not None:
            self._end(iv, s.stack_time, USER_STACK)

    def switch_in(self, tid, time, how=SWITCH_IN):
        """Task ``tid`` runs again at ``time``: a switch-in record (SWITCH_IN), or a sched_switch
        naming it as next_pid (NEXT_PID)."""
        self._advance(time)
        iv = self.open.get(tid)
        if iv is not None:
            self._end(iv, time, how)

    def seen(self, tid, time):
        """Task ``tid`` was running at ``time`` (one of its samples, its exit): its open
        interval, if any, ended by then."""
        self._advance(time)
        iv = self.open.get(tid)
        if iv is not None:
            self._end(iv, time, SEEN)

    def advance(self, time):
        """Stream time reached ``time`` (any event): the stack times before it end their waits."""
        self._advance(time)

    def finish(self):
        """The input ended (every sample's outcome given): the stack times still ahead end
        theirs; the rest never ended."""
        self._advance(None)
        for iv in list(self.open.values()):
            del self.open[iv.tid]
            self._give_up(iv, RECORDING_ENDED)
        for iv in self.unresolved.values():     # a feeder that never resolved them: as they are
            if iv.ended is not None:
                self.emit(iv)
        self.unresolved.clear()

    # -- counts -------------------------------------------------------------------------------
    @property
    def intervals(self):
        return sum(self.ended.values()) + sum(self.unended.values())

    def conserved(self):
        """Every switch-out counted once: an interval (ended or not) or a skipped preemption."""
        return self.switch_outs == self.intervals + self.skipped_preempted

    # -- inside ---------------------------------------------------------------------------------
    def _advance(self, now):
        if now is not None and (self.last is None or now > self.last):
            self.last = now
        heap = self.deadlines
        while heap and (now is None or heap[0][0] < now):
            st, _n, iv = heapq.heappop(heap)
            if self.open.get(iv.tid) is iv:
                self._end(iv, st, USER_STACK)

    def _end(self, iv, time, how):
        del self.open[iv.tid]
        iv.end, iv.ended = max(time, iv.start), how
        self.ended[how] += 1
        self.ns[how] += iv.end - iv.start
        self._hand(iv)

    def _give_up(self, iv, why):
        iv.ended = why
        self.unended[why] += 1
        self._hand(iv)

    def _hand(self, iv):
        if iv.sample.outcome is not None:       # else resolved() hands it on
            self.emit(iv)
