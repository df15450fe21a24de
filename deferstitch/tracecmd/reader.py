"""ftrace events -> the stitcher's core events (the same Stitcher the perf side feeds).

What the kernel writes, per CPU buffer, for a traced event E of a user task (ftrace options
``stacktrace`` and ``userstacktrace_delay``; series "tracing: Deferred unwinding of user space
stack traces" v6, Aug 2025 — not merged in any released kernel):

    E                                  the traced event (any system)
    ftrace:kernel_stack  {int size; unsigned long caller[size]}          same pid, same cpu
    ftrace:user_unwind_cookie {u64 cookie}                               same pid, same cpu
    ... the task returns to user space ...
    inode_cache:inode_cache {unsigned long inode; unsigned int dev; __string path}   new files only
    ftrace:user_unwind_stack {u64 cookie; __data_loc unsigned long[] stack;
                              __data_loc unsigned long[] inodes; __data_loc unsigned int[] dev}

and, with today's ``userstacktrace`` option (every released kernel), instead of the cookie:

    ftrace:user_stack {unsigned int tgid; unsigned long caller[8]}       same pid, same cpu

ftrace writes the companions right after committing E, with preemption off but interrupts on
(trace_buffer_unlock_commit_regs: commit, ftrace_trace_stack, then the user part), so an event
in an interrupt can come between E and its companions, with its own companions first:

    E1  E2(irq)  kernel_stack(E2)  cookie(E2)  kernel_stack(E1)  cookie(E1)

Each CPU therefore keeps its last few events open (MAX_NEST); a companion goes to the newest
open event of the same pid that lacks it. An event is complete (becomes a Sample) with its user
part (cookie or user_stack, written last); one without (kernel threads, no user option) when
MAX_NEST newer events are open on its CPU, at missed events there, before a stack or exit of
its task, or at the end. ``user_unwind_stack``
becomes a DeferredStack whose frames are (path, file offset) through inode_cache; missed
events on a CPU are lost records; ``sched:sched_process_exit`` is a task exit (after its own
sample); ``sched:sched_process_fork`` a tid reuse. A ``user_stack`` gives its sample the user
frames directly (outcome "passed"): frames (None, address), no file known.

Buffers (``trace-cmd record -B NAME``): the kernel writes an instance's cookies and stacks into
that instance's own ring buffer (the unwind callback of the series writes into
``tr->array_buffer`` of the trace_array whose ``unwinder`` was requested), and every instance
asks for its own stacks. So each buffer is stitched on its own (a Stitcher each, one shared
report): a cookie of buffer A never takes a stack of buffer B, and a CPU means a ring buffer of
one buffer. ``report.extra["buffers"]`` has each buffer's counts.

Missed events, per CPU and time (``lost_reason``). A page of CPU c that says events were lost
tells us where (c's ring buffer) and when: after the last record read on c (a), before the
marked one (b). A stack is written on the CPU where its task returns to user space, which need
not be the CPU of its cookie (a blocking system call sleeps and wakes up elsewhere), but it is
written between the first event of its kernel entry (lo) and the first event of the task's next
entry (hi; or the stack that ends the wait, if sooner). So a stack that never came can have
been lost in missed events only if some CPU's loss window of its buffer overlaps (lo, hi):

    CPU 0  E(C1) cookie ·········· E(C2) cookie ·· stack(C2)    task T: C1's stack never came
    CPU 1  ·· x ··|  lost  |· y ········|lost|···               windows (x, y), (z, w)
               a=x      b=y            z    w
             (lo=E(C1), hi=E(C2)) meets (x, y): "deferred-lost-after-lost-records"
             a task whose entry lies before x or after y: "deferred-lost"

The window that ends at a CPU's next, not yet read, record is known already: its page says
so (``peek``), so a loss that ftrace reports late (at the CPU's next record) still counts.

Fields are found by name. Tolerated variants: no ``inodes``/``dev`` arrays (frames keep the raw
value), inode_cache keyed by ``hash`` (and a ``hash``/``hashes`` array in the stack event).
"""
import bisect
from collections import Counter

from ..model import (DEFERRED_LOST, DEFERRED_LOST_AFTER_LOST, PASSED, STITCHED, DeferredStack,
                     Sample)
from ..report import StitchReport
from ..stitcher import DEFAULT_EXIT_GRACE, DEFAULT_MAX_PENDING, Stitcher
from ..symbols.maps import UNKNOWN

KERNEL_STACK = ("ftrace", "kernel_stack")
USER_STACK = ("ftrace", "user_stack")
COOKIE = ("ftrace", "user_unwind_cookie")
UNWIND_STACK = ("ftrace", "user_unwind_stack")
INODE_CACHE = "inode_cache"                      # system and event name
COMPANIONS = {KERNEL_STACK: "kernel", USER_STACK: "user_stack", COOKIE: "cookie"}
NO_KEY = (None, None)      # the (system, name) of an event with no format

NO_VMA = (1 << 64) - 1           # inodes[i] == -1L: no VMA at that address (raw address kept)
ANON = "[anon]"                  # inode 0: anonymous memory
NO_FILE = UNKNOWN                # no VMA / no mapping known: the outputs name it by address
MAX_NEST = 4                     # task, softirq, irq, nmi: events open at once on one CPU
TOP = "top"                      # the top buffer (bridge.TOP), for events that name none
MAX_ENTRIES = 64                 # kernel entries remembered per task (their first event's time)


def dev_name(dev):
    """The kernel's s_dev as major:minor (MAJOR = dev >> 20, MINOR = dev & 0xfffff)."""
    return "%d:%d" % (dev >> 20, dev & 0xFFFFF)


class Pending:
    """A traced event collecting its companions (kernel stack, cookie, user stack)."""

    __slots__ = ("ev", "kernel", "cookie", "user_stack", "tgid")

    def __init__(self, ev):
        self.ev = ev
        self.kernel = self.cookie = self.user_stack = self.tgid = None


class _BufferStitcher(Stitcher):
    """The Stitcher of one trace buffer; lost stacks get the feed's per-CPU reason."""

    def __init__(self, feed, buffer, **kw):
        super().__init__(feed._resolved, **kw)
        self.feed, self.buffer = feed, buffer

    def lost_reason(self, s, d):
        return self.feed.lost_reason(self.buffer, s, d)


class _BufferCounts:
    """One buffer's share of the report: samples by outcome, stacks, missed events."""

    __slots__ = ("samples", "stitched", "stitched_after_stack", "passed", "unmatched",
                 "deferred_records", "lost_records", "lost_events")

    def __init__(self):
        self.samples = self.stitched = self.stitched_after_stack = self.passed = 0
        self.deferred_records = self.lost_records = self.lost_events = 0
        self.unmatched = Counter()

    def count(self, s):
        self.samples += 1
        if s.outcome == STITCHED:
            self.stitched += 1
            self.stitched_after_stack += s.after_stack
        elif s.outcome == PASSED:
            self.passed += 1
        else:
            self.unmatched[s.reason] += 1

    def to_json(self):
        out = {k: getattr(self, k) for k in self.__slots__}
        out["unmatched"] = dict(sorted(self.unmatched.items()))
        return out


class FtraceFeed:
    """Drive the stitcher from ftrace events. ``resolved(sample)`` is called the moment a sample's
    outcome is final (at its user_unwind_stack for stitched ones); ``stack(ev, stitched, frames)``
    at each user_unwind_stack with the samples it served and its (path, offset) frames; ``sample(sample)`` in time order.
    ``peek(buffer, cpu)``: (ts, missed) of that CPU's next record, not yet fed (bridge.Trace.peek),
    ``cpus`` of each buffer: with them, a loss reported at a CPU's next page counts already;
    ``buffers``: the file's buffer names (bridge.Trace.feed_args gives all three)."""

    def __init__(self, resolved=None, sample=None, stack=None, max_pending=DEFAULT_MAX_PENDING,
                 exit_grace=DEFAULT_EXIT_GRACE, long_size=8, peek=None, cpus=0, buffers=(),
                 select=None, evidence=False):
        """``select`` (selection.Selection): the samples counted and handed on; ``evidence``:
        ``sample()`` gets the others too (``chosen`` False: off-CPU's switches)."""
        self.on_resolved, self.on_sample, self.on_stack = resolved, sample, stack
        self.select, self.evidence = select, evidence
        self.report = StitchReport()
        self.report.source = "ftrace"
        if select is not None:
            self.report.selection = select.text
        self._stitcher_args = {"max_pending": max_pending, "exit_grace": exit_grace,
                               "report": self.report}
        self.stitchers = {}         # buffer -> its _BufferStitcher
        self.buffers = {}           # buffer -> _BufferCounts
        self.peek, self.cpus = peek, cpus
        self.last = {}              # (buffer, cpu) -> time of the last record fed there
        self.windows = {}           # buffer -> [(b, a)]: events lost on a CPU after a, before b
        self.entries = {}           # (buffer, tid) -> [[cookie, first time]]: its kernel entries
        self._prune_at = {}         # buffer -> windows kept before the old ones are pruned
        self._peeked = (None, ())   # (stack, loss windows ending at the CPUs' next records)
        for buf in buffers:         # the file's order in the report: top, then the instances
            self._stitcher(buf)
        self.no_vma = (1 << (8 * long_size)) - 1
        self.open = {}              # (buffer, cpu) -> [Pending], oldest first (at most MAX_NEST)
        self.paths = {}             # (inode or hash, dev or None) -> path
        self.fifo = []              # (time, seq, sample) in time order, the head waiting to resolve
        self.head = 0               # fifo[:head] were handed on
        self.seq = 0
        self.kept = {}              # equal kernel stacks and user frames, one tuple each: _one
        self.served = None          # samples stitched by the stack being fed, for on_stack
        self.counts = Counter()     # events by (system, name)
        self.anomalies = Counter()  # companions without their event, unknown inodes, ...
        self.missed_events = 0

    # -- the loop -----------------------------------------------------------------------------
    def run(self, events):
        for ev in events:
            self.event(ev)
        return self.finish()

    def event(self, ev):
        """One event, in the order trace-cmd report prints them (time order across CPUs)."""
        t = ev.type
        key = t.key if t is not None else NO_KEY
        self.counts[key] += 1
        if t is None:               # a format that did not parse, or a damaged type id
            self.anomalies["events of a type with no event format"] += 1
        buf = getattr(ev, "buffer", TOP)
        cpu = (buf, ev.cpu)         # a ring buffer: CPU numbers are per trace buffer
        st = self.stitchers.get(buf) or self._stitcher(buf)
        if ev.missed:
            self._close_cpu(cpu)
            st.lost(1, max(ev.missed, 0))
            counts = self.buffers[buf]
            counts.lost_records += 1
            self.windows[buf].append((ev.ts, self.last.get(cpu)))
            if len(self.windows[buf]) > self._prune_at[buf]:
                self._prune(buf)
            if ev.missed > 0:
                self.missed_events += ev.missed
                counts.lost_events += ev.missed
            else:
                self.anomalies["missed events without a count"] += 1
        self.last[cpu] = ev.ts
        role = COMPANIONS.get(key)
        if role is not None:
            p = self._owner(cpu, ev.pid, role)
            if p is None:
                self.anomalies["%s without its event" % ev.name] += 1
                return
            if role == "kernel":
                p.kernel = self.kernel_frames(ev)
                return
            if role == "cookie":
                p.cookie = ev.number("cookie")
            else:
                callers = ev.numbers("caller", None) or []
                p.user_stack = tuple((None, a) for a in trim(callers, self.no_vma))
                p.tgid = ev.number("tgid", None)
            self._close(cpu, p)             # the user part is written last: p is complete
            return
        if key == UNWIND_STACK:
            self._unwind_stack(ev, buf, st)
        elif ev.system == INODE_CACHE:
            self.note_inode(ev)
        else:
            q = self.open.setdefault(cpu, [])
            q.append(Pending(ev))
            if len(q) > MAX_NEST:
                self._close(cpu, q[0])

    def _owner(self, cpu, pid, role):
        """The newest open event on cpu of this pid still lacking this companion."""
        for p in reversed(self.open.get(cpu, ())):
            if p.ev.pid == pid and getattr(p, role) is None and (
                    role == "kernel" or (p.cookie is None and p.user_stack is None)):
                return p
        return None

    def finish(self):
        for cpu in list(self.open):
            self._close_cpu(cpu)
        if not self.stitchers:
            self._stitcher(TOP)
        for st in self.stitchers.values():
            st.finish()
        self._drain()
        events = Counter()
        for key, n in self.counts.items():
            events["%s:%s" % key] += n
        self.report.extra.update({"events": dict(sorted(events.items())),
                                  "ftrace_anomalies": dict(sorted(self.anomalies.items())),
                                  "inode_cache_entries": len(self.paths),
                                  "buffers": {b: c.to_json() for b, c in self.buffers.items()}})
        return self.report

    def _stitcher(self, buf):
        st = self.stitchers.get(buf)
        if st is None:
            st = self.stitchers[buf] = _BufferStitcher(self, buf, **self._stitcher_args)
            self.buffers[buf] = _BufferCounts()
            self.windows[buf] = []
            self._prune_at[buf] = 1024
        return st

    # -- missed events: which lost stacks they can explain (module docstring) ---------------
    def lost_reason(self, buf, s, d):
        """The reason of pending sample s (buffer buf), whose stack never came: d, a stack of a
        later kernel entry of its task, has. After-lost-records only if a loss window of a CPU
        of its buffer meets the span its stack was written in."""
        lo, hi = self._entry_span(buf, s, d)
        windows = self.windows[buf]
        # (end, start) pairs, in the order of their ends (marks come in time order)
        for _b, a in windows[bisect.bisect_left(windows, (lo,)):]:
            if a is None or a <= hi:
                return DEFERRED_LOST_AFTER_LOST
        for a, b in self._coming(buf, d):
            if (a is None or a <= hi) and b >= lo:
                return DEFERRED_LOST_AFTER_LOST
        return DEFERRED_LOST

    def _coming(self, buf, d):
        """The loss windows that end at a CPU's next record (its page says events were lost
        before it), peeked once per stack d."""
        if self.peek is None:
            return ()
        if self._peeked[0] is not d:
            found = []
            for cpu in range(self.cpus):
                nxt = self.peek(buf, cpu)
                if nxt is not None and nxt[1]:
                    found.append((self.last.get((buf, cpu)), nxt[0]))
            self._peeked = (d, found)
        return self._peeked[1]

    def _prune(self, buf):
        """Forget the loss windows that end before anything that may still ask began: a pending
        sample, an event still open, the latest kernel entry of each task (bounds memory in a
        trace that loses events often)."""
        st, windows = self.stitchers[buf], self.windows[buf]
        starts = [s.time for q in st.pending.values() for s in q]
        starts += [p.ev.ts for (b, _cpu), q in self.open.items() if b == buf for p in q]
        starts += [ent[-1][1] for (b, _tid), ent in self.entries.items() if b == buf and ent]
        if starts:
            windows = windows[bisect.bisect_left(windows, (min(starts),)):]
        else:
            windows = []
        self.windows[buf] = windows
        self._prune_at[buf] = 2 * len(windows) + 1024

    def _entry_span(self, buf, s, d):
        """(lo, hi): s's kernel entry began at lo (its first event); its task was in another
        entry by hi (that entry's first event, or d's time)."""
        lo, hi = s.time, d.time
        ent = self.entries.get((buf, s.tid), ())
        for i, (cookie, first) in enumerate(ent):
            if cookie == s.cookie:
                lo = min(lo, first)
                if i + 1 < len(ent):
                    hi = min(hi, ent[i + 1][1])
                break
        return lo, hi

    def _entry(self, buf, s):
        """Note the kernel entry (cookie) of a sample of s.tid: a new one when the cookie changes."""
        ent = self.entries.get((buf, s.tid))
        if ent is None:
            ent = self.entries[(buf, s.tid)] = []
        if ent and ent[-1][0] == s.cookie:
            ent[-1][1] = min(ent[-1][1], s.time)
            return
        ent.append([s.cookie, s.time])
        if len(ent) > MAX_ENTRIES:
            del ent[0]

    # -- events -------------------------------------------------------------------------------
    def _close_cpu(self, cpu):
        for p in list(self.open.get(cpu, ())):
            self._close(cpu, p)

    def _close(self, cpu, p):
        """Open event p on cpu ((buffer, cpu)) has all its companions: it becomes a Sample."""
        q = self.open[cpu]
        q.remove(p)
        if not q:
            del self.open[cpu]
        ev = p.ev
        buf = cpu[0]
        st = self.stitchers[buf]
        s = Sample(ev.pid, p.tgid if p.tgid is not None else ev.pid, ev.cpu, ev.ts,
                   p.kernel or (), p.cookie, ev, ev.comm)
        if p.user_stack is not None and p.cookie is None:
            s.user = p.user_stack
        if self.select is not None:
            s.chosen = self.select.admits(s.pid, s.tid, s.comm, s.cpu, s.time)
        if s.cookie is not None:
            self._entry(buf, s)
        self.seq += 1
        # only sample() needs the time order: without it, nothing keeps a resolved sample
        # behind one still waiting (a task that never returns to user space would keep every
        # later sample of the file; _tracefeed.c's compact() is the same)
        if self.on_sample is not None:
            bisect.insort(self.fifo, (s.time, self.seq, s), lo=self.head)
        st.sample(s)
        if (ev.system, ev.name) == ("sched", "sched_process_exit"):
            st.exit(ev.number("pid", ev.pid), ev.ts)
        elif (ev.system, ev.name) == ("sched", "sched_process_fork"):
            child = ev.number("child_pid", None)
            if child is not None:
                st.reuse(child)
                self.entries.pop((buf, child), None)
        self._drain()

    def _flush_pid(self, buf, pid):
        for cpu, q in list(self.open.items()):
            if cpu[0] == buf:
                for p in [p for p in q if p.ev.pid == pid]:
                    self._close(cpu, p)

    def kernel_frames(self, ev):
        """The kernel frames of a kernel_stack event (also the C feed's, through EngineFeed._slow)."""
        f = ev.type.fields.get("size")
        size = ev.number("size") if f is not None and f.unpack is not None else ev.get("size")
        if isinstance(size, int) and size >= 0 and "caller" in ev:
            callers = ev.array("caller", size)
        else:
            callers = ev.numbers("caller", None) or []
        return self._one(tuple(trim(callers, self.no_vma)))

    def _one(self, frames):
        """frames, or the equal tuple kept before (4096 at most, then started over): a sample
        waiting in time order refers to its frames instead of holding its own copy."""
        kept = self.kept
        if len(kept) >= 4096:
            kept.clear()
        return kept.setdefault(frames, frames)

    def note_inode(self, ev):
        """An inode_cache event: its path under (inode or hash, dev) in ``paths``."""
        key = ev.number("inode", ev.number("hash", None))
        if key is None:
            self.anomalies["inode_cache without inode or hash"] += 1
            return
        self.paths[(key, ev.number("dev", None))] = ev.text("path", "")

    def _unwind_stack(self, ev, buf, st):
        pid = ev.pid
        self._flush_pid(buf, pid)       # its events may sit open on another CPU (migration)
        stack = ev.numbers("stack", None) or []
        keys = None
        for name in ("inodes", "hashes", "hash"):
            if name in ev:
                keys = ev.numbers(name)
                break
        devs = ev.numbers("dev", None)
        frames = []
        for i, off in enumerate(stack):
            k = keys[i] if keys is not None and i < len(keys) else None
            d = devs[i] if devs is not None and i < len(devs) else None
            frames.append((self._path(k, d), off))
        self.served = []
        cookie = ev.number("cookie")
        self.buffers[buf].deferred_records += 1
        st.deferred(DeferredStack(pid, pid, cookie, ev.ts, self._one(tuple(frames))))
        served, self.served = self.served, None
        ent = self.entries.get((buf, pid))
        if ent:                         # the entries before this stack's are over
            i = next((i for i, (c, _t) in enumerate(ent) if c == cookie), None)
            if i:
                del ent[:i]
        if self.on_stack is not None:
            self.on_stack(ev, served, frames)
        self._drain()

    def _path(self, key, dev):
        if key is None:
            return NO_FILE
        if key == self.no_vma:
            return NO_FILE
        if key == 0:
            return ANON
        path = self.paths.get((key, dev))
        if path is None:
            path = self.paths.get((key, None))
        if path is None:
            self.anomalies["inode not in inode_cache"] += 1
            return "[inode %d%s]" % (key, "" if dev is None else " dev " + dev_name(dev))
        return path

    # -- outputs ------------------------------------------------------------------------------
    def _resolved(self, s):
        if s.chosen:
            self.buffers[getattr(s.ref, "buffer", TOP)].count(s)
        if self.served is not None and s.outcome == "stitched":
            self.served.append(s)
        if self.on_resolved is not None and s.chosen:
            self.on_resolved(s)

    def _drain(self):
        """Hand resolved samples on in time order: the head waits while it is unresolved or an
        event still open on some CPU is older (it will be inserted before it)."""
        fifo = self.fifo
        i = self.head
        if i >= len(fifo) or fifo[i][2].outcome is None:
            return                  # nothing to hand on yet
        oldest_open = min((p.ev.ts for q in self.open.values() for p in q), default=None)
        while i < len(fifo):
            s = fifo[i][2]
            if s.outcome is None or (oldest_open is not None and oldest_open < s.time):
                break
            if self.on_sample is not None and (s.chosen or self.evidence):
                self.on_sample(s)
            fifo[i] = None
            i += 1
        if i > 4096 and i * 2 > len(fifo):
            del fifo[:i]
            i = 0
        self.head = i


def trim(callers, no_vma):
    """Stack entries up to the first 0 or ULONG_MAX (ftrace's end markers)."""
    out = []
    for a in callers:
        if a == 0 or a == no_vma:
            break
        out.append(a)
    return out


def user_frames(s):
    """The user frames of a sample, innermost first: (path or None, offset or address)."""
    return s.user or ()
