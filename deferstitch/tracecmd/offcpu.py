"""Off-CPU time of a trace.dat: the waits of offcpu.py (the core both sides share) from ftrace's
``sched:sched_switch`` events and their deferred user stacks.

    FtraceFeed (Python) --sample(s), every event a Sample, in time order--> TraceOffCpu.named
        sched_switch of prev_pid   switch_out(s): its stitched stack is the wait's stack
                   naming next_pid switch_in(next_pid, NEXT_PID)
        any other event of a task  seen(tid, time): it was running
        each ended wait            inner.named(s, ns) (Folded, FlameGraph: weights in ns)

Every event that is not a companion (kernel_stack, user_unwind_cookie, user_stack), a
user_unwind_stack or an inode_cache record becomes a Sample of the feed, stack or not (a kernel
thread's, an event of no user part), and reaches ``named`` once its outcome is final, in time
order: so the samples alone drive the core. The user_unwind_stack of a switch-out is not seen
here, but its time is: the stitcher sets ``stack_time`` on the sample it completed, which the
core takes as the wait's end when nothing earlier ended it (USER_STACK).

The fields are read by the file's own sched_switch format, its prev_state letters by the table
of its ``__print_flags`` (perfdata/sched.py SchedSwitch, the perf side's reader). It runs on
the Python feed (engine.feed(python=True)): the C engine hands samples without their records.
A wait whose stack was not stitched keeps its reason (the outputs' lost frame), as any sample.
"""
from .. import offcpu as O
from ..errors import DeferstitchError
from ..output.offcpu import Waits
from ..perfdata.sched import SchedSwitch

SWITCH = ("sched", "sched_switch")
UNKNOWN_COMM = "<...>"          # saved_cmdlines knows no name for the pid (bridge.Event.comm)


def switch_types(trace):
    """{type id: SchedSwitch} of the file's sched:sched_switch formats that have the fields."""
    out = {}
    for tid, t in trace.types.items():
        if t.key != SWITCH:
            continue
        sw = SchedSwitch.of_format([f.desc for f in t.fields.values()],
                                   trace.format_text(tid), trace.endian)
        if sw is not None:
            out[tid] = sw
    return out


def switch_types_or_fail(trace):
    """switch_types(), or the one line saying what the file lacks for off-CPU time."""
    found = switch_types(trace)
    if not found:
        raise DeferstitchError("%s: no sched:sched_switch event with prev_pid, prev_state and "
                               "next_pid in its format: record with trace-cmd record -e "
                               "sched:sched_switch (and the options that defer user stacks)"
                               % trace.path)
    return found


class TraceOffCpu(Waits):
    """The feed's ``sample`` callback for off-CPU time: each sample to ``named(s)``; each
    ended wait to ``inner.named(s, ns)`` (``inner`` None: the
    report's counts alone). ``preempted``: count preemptions as waits too. ``close()`` at the
    end ends what the stack times still can, the rest is counted as never ended."""

    def __init__(self, inner, trace, preempted=False):
        self.inner = inner
        self.switches = switch_types_or_fail(trace)
        self.core = O.OffCpu(self._wait, preempted)
        self._waits_init()
        self._closed = False

    def named(self, s):
        """A sample of the feed, its outcome final, in time order."""
        ref = s.ref
        t = getattr(ref, "type", None)
        sw = self.switches.get(t.id) if t is not None else None
        if sw is None:
            if s.tid is not None and s.time is not None:
                self.core.seen(s.tid, s.time)
                if s.chosen:
                    self.on_cpu[s.tid] += 1
            return
        try:
            comm, _prev_pid, state, next_pid = sw.fields(ref.data)
        except ValueError:
            self.unreadable += 1
            return
        if s.chosen:                    # a wait is chosen by its switch-out (selection.py)
            self.core.switch_out(s, state, comm)
        elif s.tid is not None and s.tid >= 0 and s.time is not None:
            self.core.seen(s.tid, s.time)
        if next_pid > 0:
            self.core.switch_in(next_pid, s.time, O.NEXT_PID)

    def close(self):
        """The input ended: finish the core (its last waits go to ``inner``), then ``inner``."""
        if self._closed:
            return
        self._closed = True
        self.core.finish()
        if self.inner is not None:
            self.inner.close()

    def _wait(self, iv):
        s = iv.sample
        if (s.comm is None or s.comm == UNKNOWN_COMM) and iv.comm:
            s.comm = iv.comm            # saved_cmdlines did not know it: the event's prev_comm
        ns = self._count_wait(iv, s.comm)
        if ns is None:
            return
        self.threads[iv.tid][1][iv.state] += ns
        if self.inner is not None:
            self.inner.named(s, ns)
