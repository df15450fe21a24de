"""reader.FtraceFeed on the C engine (``_tracedat.Feed``, deferstitch/_tracefeed.c): the same
samples in the same order, the same report, at the speed of the page reader.

    feed(trace, ...)    an EngineFeed where the engine can read the file (every buffer walked
                        by our page reader: pages.walker), else the Python FtraceFeed

The Python feed stays the definition (and the trace-cmd plugin's). The engine reads a field
itself only where bridge.Field would take its fast branch; any other field (and an inode_cache
record it cannot read whole) it hands to ``_slow`` below, which reads it with the Python feed's
own code, so a value or a FormatError is the same on both paths. tests/test_tracecmd_engine.py
holds the two to the same bytes on every trace.dat of the tests. ``DEFERSTITCH_TRACE_FEED=python``
keeps the Python feed over the C walker; ``DEFERSTITCH_ACCEL=0`` keeps both in Python (walk.py);
``DEFERSTITCH_ACCEL=require`` makes a run the engine cannot take an error, as on the perf side.
"""
import os
from collections import Counter

from ..errors import DeferstitchError
from ..model import OUTCOME_KEYS, STITCHED, UNMATCHED, Sample
from ..stitcher import DEFAULT_EXIT_GRACE, DEFAULT_MAX_PENDING
from . import pages, reader
from .bridge import TOP, Event, INT_CODES
from .formats import TEP_FIELD_IS_RELATIVE

# roles, slow() kinds, field kinds: the enums of _tracefeed.c, in their order; the modes are
# _twin.h's FEED_MODE_* (tests/test_twin_constants.py)
R_PLAIN, R_KERNEL, R_COOKIE, R_USTACK, R_UNWIND, R_INODE, R_EXIT, R_FORK = range(8)
(S_KERNEL, S_COOKIE, S_UCALLERS, S_TGID, S_STACK, S_KEYS, S_DEVS, S_INODE, S_EXIT,
 S_FORK) = range(10)
F_ABSENT, F_SLOW, F_SCALAR, F_STATIC, F_DYNAMIC, F_STRING, F_DYNSTRING = range(7)
MODE_NONE, MODE_SAMPLES, MODE_RESOLVED = range(3)
MAX_TYPE_ID = 1 << 20           # the engine counts events in an array by type id
SPILL_AT = 16384                # script/folded: samples waiting in time order behind one whose
                                # stack has not come, past which the engine spills them to a file
ANOMALIES = ("events of a type with no event format", "missed events without a count",
             "kernel_stack without its event", "user_unwind_cookie without its event",
             "user_stack without its event", "inode not in inode_cache",
             "inode_cache without inode or hash")
ROLES = {reader.KERNEL_STACK: R_KERNEL, reader.COOKIE: R_COOKIE, reader.USER_STACK: R_USTACK,
         reader.UNWIND_STACK: R_UNWIND, ("sched", "sched_process_exit"): R_EXIT,
         ("sched", "sched_process_fork"): R_FORK}
# the fields each role reads, in the order _tracefeed.c takes them (Spec f[0..3])
FIELDS = {R_KERNEL: ("size", "caller"), R_COOKIE: ("cookie",), R_USTACK: ("caller", "tgid"),
          R_UNWIND: ("cookie", "stack", None, "dev"), R_INODE: ("inode", "hash", "dev", "path"),
          R_EXIT: ("pid",), R_FORK: ("child_pid",)}


class _NoType:
    """The ref of a sample whose record has a type with no format (as Event.system/name)."""
    system = name = None


def unavailable(trace):
    """Why the engine cannot read this file, or None when it can (perfdata/engine.py's
    unavailable, for trace.dat)."""
    if not pages.available() or pages.Feed is None:
        return "the C engine is not built"
    if not pages.accel_allowed():
        return "DEFERSTITCH_ACCEL=0"
    if os.environ.get("DEFERSTITCH_TRACE_FEED") == "python":
        return "DEFERSTITCH_TRACE_FEED=python"
    if trace.unreadable:
        return "a buffer that is not read (%s)" % trace.unreadable[0]
    if not all(pages.is_c_walker(getattr(h, "walker", None)) for h in trace.handles.values()):
        return "a buffer the C walker does not read (times shifted, no decompressor or no data)"
    if not all(0 <= i <= MAX_TYPE_ID for i in trace.types):
        return "an event type id past %d" % MAX_TYPE_ID
    return None


def usable(trace):
    """The engine reads this file: built, allowed, our page reader walking every buffer."""
    return unavailable(trace) is None


def feed(trace, resolved=None, sample=None, stitched=None, max_pending=DEFAULT_MAX_PENDING,
         exit_grace=DEFAULT_EXIT_GRACE, python=False, select=None, evidence=False):
    """The feed of ``trace``: ``sample(s)`` in time order, ``stitched(frames, n)`` for n
    stitched samples given those user frames (as they are resolved), as reader.FtraceFeed's
    ``sample`` and ``resolved``. ``resolved`` (a Sample each) and ``python``: the Python feed;
    ``select`` (a selection.Selection; the Python feed) and ``evidence`` as FtraceFeed's."""
    why = (unavailable(trace) if resolved is None and not python and select is None
           else "a command it does not feed")
    if why is None:
        return EngineFeed(trace, sample, stitched, max_pending, exit_grace)
    if os.environ.get("DEFERSTITCH_ACCEL") == "require":
        raise DeferstitchError("DEFERSTITCH_ACCEL=require, but the C engine was not used: %s" % why)
    if stitched is not None:
        inner = resolved

        def resolved(s):
            if s.outcome == STITCHED:
                stitched(s.user, 1)
            if inner is not None:
                inner(s)
    return reader.FtraceFeed(resolved=resolved, sample=sample, max_pending=max_pending,
                             exit_grace=exit_grace, select=select, evidence=evidence,
                             **trace.feed_args())


def _spec(f):
    """How _tracefeed.c reads a bridge.Field: (kind, offset, size, elem, signed, relative)."""
    if f is None:
        return None
    d = f.desc
    rel = int(bool(d.flags & TEP_FIELD_IS_RELATIVE) or (f.type or "").startswith("__rel_loc"))
    if f.unpack is not None:
        kind = F_SCALAR
    elif d.size < 0:                        # a damaged format: Python's own way
        kind = F_SLOW
    elif f.is_string and d.offset >= 0:     # Field.read's string branch: a slice, cut at NUL
        kind = F_DYNSTRING if f.dynamic else F_STRING
    elif f.is_string or INT_CODES.get(f.elem) is None or d.offset < 0:
        kind = F_SLOW
    elif f.dynamic:
        kind = F_DYNAMIC
    elif f.count:
        kind = F_STATIC
    else:
        kind = F_SLOW
    return (kind, max(d.offset, 0), max(d.size, 0), f.elem or 1, int(f.signed), rel)


def _types(trace):
    """{type id: (role, field specs)} for every format of the file."""
    out = {}
    for tid, t in trace.types.items():
        role = ROLES.get(t.key, R_INODE if t.system == reader.INODE_CACHE else R_PLAIN)
        names = FIELDS.get(role, ())
        if role == R_UNWIND:        # the frames' keys: inodes, else hashes, else hash
            key = next((n for n in ("inodes", "hashes", "hash") if n in t.fields), None)
            names = ("cookie", "stack", key, "dev")
        out[tid] = (role, tuple(_spec(t.fields.get(n)) if n else None for n in names))
    return out


class EngineFeed:
    """FtraceFeed's interface (run, finish, report, paths) over the C engine."""

    def __init__(self, trace, sample, stitched, max_pending, exit_grace):
        self.trace = trace
        self.on_sample, self.on_stitched = sample, stitched
        self.paths = {}
        self.anomalies = Counter()      # what _slow's Python counts (FtraceFeed.note_inode)
        self.report = reader.StitchReport()
        self.report.source = "ftrace"
        self._py = reader.FtraceFeed(long_size=trace.long_size)     # its field readers
        self._py.paths, self._py.anomalies = self.paths, self.anomalies
        self._handles = list(trace.handles.values())     # TOP, then the instances
        types = _types(trace)
        mode = MODE_SAMPLES if sample else MODE_RESOLVED if stitched else MODE_NONE
        sink = self._samples if sample else self._stitched
        walkers = [(h.walker, h.walker_cpus()) for h in self._handles]
        self._c = pages.Feed(
            walkers, types, max(types, default=0), mode, sink, self._slow, self.paths,
            reader.NO_FILE, reader.ANON, self._unknown, max_pending, exit_grace, SPILL_AT)
        self._comm = trace.comm
        self._comms = {}
        self._refs = {tid: t for tid, t in trace.types.items()}
        self._done = False

    # -- the loop -----------------------------------------------------------------------------
    def run(self, events=None):
        """Every record (``events`` is the trace: the engine walks its pages itself)."""
        try:
            self._c.run()
        except pages.Damaged as err:     # as Handle.iter_records says it, of its buffer
            raise self._handles[self._c.failed].walked(err) from None
        for h in self._handles:
            h.walked()
        return self.finish()

    def finish(self):
        if self._done:
            return self.report
        self._done = True
        self._c.finish()
        self._fill(self._c.counts())
        self._c = None              # it holds our bound methods: no cycle left behind
        return self.report

    # -- what Python reads for the engine -------------------------------------------------------
    def _slow(self, kind, rec):
        """A field the engine does not read itself, read as the Python feed reads it."""
        ts, cpu, missed, type_id, pid, offset, data = rec
        t = self.trace
        ev = Event(t, t.types.get(type_id), ts, cpu, missed, pid, offset, data, t.comm(pid), TOP)
        py = self._py
        if kind == S_KERNEL:
            return py.kernel_frames(ev)
        if kind == S_COOKIE:
            return ev.number("cookie")
        if kind == S_UCALLERS:
            callers = ev.numbers("caller", None) or []
            return tuple((None, a) for a in reader.trim(callers, py.no_vma))
        if kind == S_TGID:
            return ev.number("tgid", None)
        if kind == S_STACK:
            return ev.numbers("stack", None) or []
        if kind == S_KEYS:
            for name in ("inodes", "hashes", "hash"):
                if name in ev:
                    return ev.numbers(name)
            return None
        if kind == S_DEVS:
            return ev.numbers("dev", None)
        if kind == S_INODE:
            py.note_inode(ev)
            return None
        if kind == S_EXIT:
            return ev.number("pid", ev.pid)
        assert kind == S_FORK, kind
        return ev.number("child_pid", None)

    def _unknown(self, key, dev):
        """The frame file of an inode inode_cache never named (FtraceFeed._path)."""
        return "[inode %d%s]" % (key, "" if dev is None else " dev " + reader.dev_name(dev))

    # -- outputs ------------------------------------------------------------------------------
    def _samples(self, batch):
        on, comms, refs = self.on_sample, self._comms, self._refs
        for tid, pid, cpu, ts, type_id, kernel, user, key, after, cookie in batch:
            c = comms.get(tid)
            if c is None:
                c = comms[tid] = self._comm(tid)
            s = Sample(tid, pid, cpu, ts, kernel, cookie, refs.get(type_id, _NoType), c)
            outcome = OUTCOME_KEYS[key]
            if key > 1:
                s.outcome, s.reason = UNMATCHED, outcome
            else:
                s.outcome = outcome
            s.user = user
            s.after_stack = after
            on(s)

    def _stitched(self, batch):
        on = self.on_stitched
        if on is not None:
            for frames, n in batch:
                on(frames, n)

    def _fill(self, c):
        """The StitchReport and the ftrace counters of FtraceFeed.finish, from the engine's."""
        rep = self.report
        for k in ("samples", "stitched", "stitched_after_stack", "passed", "deferred_records",
                  "duplicate_deferred", "orphan_deferred", "lost_records", "lost_events",
                  "max_pending"):
            setattr(rep, k, c[k])
        unmatched = Counter({OUTCOME_KEYS[k]: n for k, n in enumerate(c["unmatched"]) if n})
        rep.unmatched = unmatched
        rep.first_unmatched = [(t, tid, cookie, OUTCOME_KEYS[k])
                               for t, tid, cookie, k in c["first_unmatched"]]
        rep.orphans = list(c["orphans"])
        comm = self._comm
        for tid, cpu, k, n in c["cells"]:
            rep.cells[(tid, cpu, OUTCOME_KEYS[k])] = n
            rep.comms[tid] = comm(tid)
        events = Counter()
        for type_id, n in c["types"].items():
            events["%s:%s" % self.trace.types[type_id].key] += n
        if c["untyped"]:
            events["%s:%s" % reader.NO_KEY] += c["untyped"]
        anomalies = Counter(self.anomalies)
        for name, n in zip(ANOMALIES, c["anomalies"]):
            if n:
                anomalies[name] += n
        buffers = {}
        for name, b in zip(self.trace.handles, c["buffers"]):
            b["unmatched"] = {OUTCOME_KEYS[k]: n for k, n in enumerate(b["unmatched"]) if n}
            b["unmatched"] = dict(sorted(b["unmatched"].items()))
            buffers[name] = b
        rep.extra.update({"events": dict(sorted(events.items())),
                          "ftrace_anomalies": dict(sorted(anomalies.items())),
                          "inode_cache_entries": len(self.paths), "buffers": buffers})
