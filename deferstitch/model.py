"""The core events the stitcher consumes: no perf or trace-cmd detail lives here.

Front ends (the perf.data reader, the perf script plugin, the trace-cmd bridge) turn their
input into these, in time order, and read the outcome back from each Sample.
"""

STITCHED = "stitched"     # kernel part + the user frames of its kernel entry
PASSED = "passed"         # its chain was not deferred: nothing to do
UNMATCHED = "unmatched"   # deferred, but no user stack can be given: see ``reason``

# Reasons a deferred sample stays unmatched.
DEFERRED_LOST = "deferred-lost"                       # task went back to user space; its stack never came
DEFERRED_LOST_AFTER_LOST = "deferred-lost-after-lost-records"   # ... and records were lost meanwhile
TASK_EXITED = "task-exited"                           # the task exited before returning to user space
STREAM_ENDED = "stream-ended"                         # input ended with the sample still waiting
EVICTED = "evicted"                                   # pushed out by --max-pending
NO_TASK = "no-task-id"                                # the sample carries no tid/time to match on
# Only where stacks carry no cookie (matching by task order, see stitcher.py):
AMBIGUOUS_NO_COOKIE = "ambiguous-no-cookie"   # taken after its task wrote a stack, before the task
                                              # was seen in user space: that entry's or the next?
LOST_NO_COOKIE = "lost-records-no-cookie"     # pending across lost records, or taken after them
                                              # before its task was seen in user space
REASONS = (DEFERRED_LOST, DEFERRED_LOST_AFTER_LOST, TASK_EXITED, STREAM_ENDED, EVICTED, NO_TASK,
           AMBIGUOUS_NO_COOKIE, LOST_NO_COOKIE)
# An outcome by number, as the C engines give it: stitched, passed, then each reason (unmatched);
# the C side's numbers are deferstitch/_twin.h's, held to these by tests/test_twin_constants.py
OUTCOME_KEYS = (STITCHED, PASSED) + REASONS

# The cookie of a deferred sample whose chain ends in the marker alone (the pre-cookie layout);
# real cookies are u64, so -1 is never one.
NO_COOKIE = -1


class Sample:
    """One sample: where and when, the kernel part of its chain, and its cookie (None if the
    chain was not deferred). ``ref`` is the front end's own handle (a perf record, an event).
    ``user_mode``: taken while the task ran in user space (matching by task order uses it as
    proof that the task's previous kernel entry is over).
    The stitcher fills ``outcome``, ``reason``, ``user`` (the user frames), ``after_stack`` and
    ``stack_time`` (when that stack was written: the task was back on its way to user space);
    a sample the front end marks ``chosen = False`` (a selection left it out) is stitched like
    any other, but neither counted in the report nor handed to the outputs;
    for a sample that was never deferred it leaves ``user`` as the front end set it (e.g. the
    user frames of a synchronous ftrace user_stack)."""

    __slots__ = ("tid", "pid", "cpu", "time", "kernel", "cookie", "ref", "comm",
                 "outcome", "reason", "user", "after_stack", "lost_seq", "user_mode",
                 "doubt", "since", "stack_time", "chosen")

    def __init__(self, tid, pid, cpu, time, kernel, cookie, ref=None, comm=None, user_mode=False):
        self.tid, self.pid, self.cpu, self.time = tid, pid, cpu, time
        self.kernel, self.cookie, self.ref, self.comm = kernel, cookie, ref, comm
        self.outcome = self.reason = self.user = self.stack_time = None
        self.after_stack = False
        self.lost_seq = 0
        self.user_mode = user_mode
        self.doubt = None       # task order: the stack its task wrote last, if that may be its own
        self.since = None       # task order: since when its task's records must all be there
        self.chosen = True      # the selection's (selection.py): False, stitched but not counted

    def __repr__(self):
        return "Sample(tid=%s, time=%s, cookie=%s, %s%s)" % (
            self.tid, self.time, self.cookie if self.cookie is None else hex(self.cookie),
            self.outcome, "/" + self.reason if self.reason else "")


class DeferredStack:
    """The user stack of one kernel entry of a task, written when it returned to user space.
    ``cookie`` is None where the layout has none (NO_COOKIE samples). ``dropped`` counts
    entries the front end had to drop (context markers inside the stack)."""

    __slots__ = ("tid", "pid", "cookie", "time", "frames", "dropped")

    def __init__(self, tid, pid, cookie, time, frames, dropped=0):
        self.tid, self.pid, self.cookie, self.time = tid, pid, cookie, time
        self.frames, self.dropped = frames, dropped
