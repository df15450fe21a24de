"""Off-CPU time into any counted output: each wait of a task (offcpu.py) a stack weighted by
the nanoseconds it lasted, and, for the wall-clock view, the on-CPU samples beside them.

    PerfFeed --arrived(s), passing(rec) as they come; resolved(s) as each outcome comes-->
        OffCpuFeed --OffCpu (the core)--> each ended wait whose outcome is known:
        inner.resolved_counted(..., period=ns, count=1, ...)  (or resolved_ips)

The output it wraps (Folded, FlameGraph, Pprof, Speedscope) is made with weights by period;
``view`` on it names the frame the next stacks go under in the wall-clock view ([on-cpu] or
[off-cpu], below the comm). It runs on the Python path: it needs each sched_switch sample's raw
fields and the switch records in time order, which the C engine does not hand. It takes them as
they come, not through the feed's hold-back queue: a task blocked to the end of the recording,
its stack never written, would hold every record behind its switch-out there.
"""
import contextlib
import sys
from collections import Counter

from .. import offcpu as O
from ..abi import consts as C
from ..abi.consts import PERF_CONTEXT_USER
from ..abi import records as R
from ..errors import DeferstitchError
from ..model import OUTCOME_KEYS, STITCHED
from ..perfdata.sched import SchedSwitch, switch_in
from .frames import sample_ips
from .sink import CHAINS, COUNTED, OFF_CPU, ON_CPU, Sink

_KEY = {k: i for i, k in enumerate(OUTCOME_KEYS)}
_TIME_CONFIGS = (0, 1)                      # PERF_COUNT_SW_CPU_CLOCK, _TASK_CLOCK
FREQ = 1 << 10                              # perf_event_attr.freq: sample_freq, not a period


def switch_events(perf):
    """{entry index: SchedSwitch} of the file's sched:sched_switch events."""
    out = {}
    for ent in perf.evlist.entries:
        sw = SchedSwitch.of(perf, ent)
        if sw is not None:
            out[ent.index] = sw
    return out


class Plan:
    """What the file holds for off-CPU time, known before the run: ``switches`` (switch_events),
    ``timed`` (a time event for the wall-clock view), ``estimate`` (a sched_switch sampled by
    frequency). A pipe carries its attrs and formats as records: they are read ahead."""

    def __init__(self, perf):
        self._of(perf)
        if not self.switches and perf.pipe:
            with perf.ahead() as records:       # up to the first sample: the metadata records
                for rec in records:
                    if rec.type == C.PERF_RECORD_SAMPLE:
                        break
                self._of(perf)

    def _of(self, perf):
        self.switches = switch_events(perf)
        entries = perf.evlist.entries
        self.timed = any(is_time_event(e.attr) for e in entries)
        self.estimate = any(entries[i].attr.flags & FREQ for i in self.switches)


def plan_or_fail(perf, wall=False):
    """The Plan, or the one line saying what the file lacks for off-CPU time."""
    plan = Plan(perf)
    if not plan.switches:
        raise DeferstitchError("%s: no sched:sched_switch event with its format: record with "
                               "perf record -e sched:sched_switch --call-graph fp,defer" % perf.path)
    if wall and not plan.timed:
        raise DeferstitchError("%s: the wall-clock view needs on-CPU samples of a time event "
                               "(cpu-clock or task-clock), whose period is time: record with "
                               "-e sched:sched_switch -e cpu-clock/freq=999/" % perf.path)
    return plan


def frequency_note(plan, path):
    """One line when a sched_switch event was sampled by frequency (a global -F puts the
    tracepoint in frequency mode: one sample per several switches), else None."""
    if not plan.estimate:
        return None
    return ("deferstitch: %s: sched:sched_switch was sampled by frequency (a global -F), so only "
            "some switches were recorded and the waits between them cannot be rebuilt; the "
            "off-CPU times given are estimates (each wait times the switches its sample stands "
            "for). Record with: perf record -e sched:sched_switch -e cpu-clock/freq=999/ "
            "--call-graph fp,defer" % path)


def is_time_event(attr):
    """cpu-clock or task-clock: a sample's period is ns on the CPU (the wall-clock view's)."""
    return attr.type == C.PERF_TYPE_SOFTWARE and attr.config in _TIME_CONFIGS


class Waits:
    """What both sides count of the waits for report --off-cpu (tables(), to_json()): ``core``
    (offcpu.OffCpu), ``threads``, ``on_cpu``, ``unreadable`` and ``estimate``; the perf side's
    OffCpuFeed and the trace side's tracecmd/offcpu.TraceOffCpu."""

    core = None
    estimate = False

    def _waits_init(self):
        self.on_cpu = Counter()          # tid -> on-CPU samples (report)
        self.threads = {}                # tid -> [comm, Counter(state -> ns), Counter(ended/why)]
        self.unreadable = 0              # sched_switch samples whose raw data did not decode

    def _count_wait(self, iv, comm):
        """Note wait ``iv`` of its thread (how it ended); its ns off the CPU (None: never
        ended), which the caller adds to the thread's time by state."""
        th = self.threads.get(iv.tid)
        if th is None:
            th = self.threads[iv.tid] = [None, Counter(), Counter()]
        th[0] = comm or th[0]
        th[2][iv.ended] += 1
        return iv.duration

    def summary(self):
        """The counts that add up: switch-outs, waits ended by what, never ended by why."""
        core = self.core
        return {"switch_outs": core.switch_outs, "preempted_not_counted": core.skipped_preempted,
                "ended": dict(core.ended), "never_ended": dict(core.unended),
                "ns_by_ending": dict(core.ns), "unreadable": self.unreadable,
                "estimate": self.estimate}


class OffCpuFeed(Sink, Waits):
    """A Sink on the Python path that turns sched_switch samples into waits for ``inner``.
    ``preempted``: count preemptions as waits; ``wall``: the wall-clock view (on-CPU samples of
    a time event too, each under [on-cpu]: its period is ns)."""

    takes = None
    in_order = False        # arrived(), passing() and resolved(): nothing held back

    def __init__(self, inner, perf, preempted=False, wall=False, plan=None):
        self.inner, self.perf, self.wall = inner, perf, wall
        plan = plan or plan_or_fail(perf, wall)
        self.switches, self.estimate = plan.switches, plan.estimate
        self.core = O.OffCpu(self._wait, preempted)
        self.chains = getattr(inner, "takes", None) == CHAINS
        self.counted = getattr(inner, "takes", None) in (COUNTED, CHAINS)
        self.report = None
        self._waits_init()

    # -- the run's calls (Sink), as the input comes ---------------------------------------------
    def arrived(self, s):
        """A sample as it comes, in time order: a switch-out opens a wait (its stack comes with
        resolved()); any other sample of a task says it was running. A wait is chosen by its
        switch-out (its task, the time it began); every switch is evidence for the others."""
        ref = s.ref
        sw = self.switches.get(ref.entry.index)
        if sw is None:
            if s.tid is not None and s.time is not None:
                self.core.seen(s.tid, s.time)
                if s.chosen:
                    self.on_cpu[s.tid] += 1
            return
        if not ref.lead:        # a group read's other members: the same switch, once
            return
        try:
            comm, _prev_pid, state, next_pid = sw.fields(ref.parsed.raw)
        except ValueError:
            self.unreadable += 1
            return
        if s.time is None:
            self.unreadable += 1
            return
        if s.chosen:
            self.core.switch_out(s, state, comm)
        elif s.tid is not None and s.tid >= 0:    # a wait left out (selection.py): its task ran
            self.core.seen(s.tid, s.time)
        if next_pid > 0:
            self.core.switch_in(next_pid, s.time, O.NEXT_PID)

    def passing(self, rec):
        """A record as it comes, in time order: a switch-in ends its task's wait; an exit says
        the task ran until then."""
        t = rec.type
        if t in (C.PERF_RECORD_SWITCH, C.PERF_RECORD_SWITCH_CPU_WIDE):
            if switch_in(rec):
                tid, time = self._id(rec)
                if tid is not None and time is not None:
                    self.core.switch_in(tid, time, O.SWITCH_IN)
        elif t == C.PERF_RECORD_EXIT:
            task = R.parse_task(rec.data, self.perf.endian)
            self.core.seen(task.tid, task.time)

    def resolved(self, s):
        """A sample's outcome, the moment its stack came (or it was given up): a switch-out's
        wait may end or be handed on now; the wall-clock view's on-CPU samples go to the output."""
        ref = s.ref
        if ref.entry.index in self.switches:
            self.core.resolved(s)
        elif self.wall and is_time_event(ref.entry.attr):
            self.inner.view = ON_CPU
            self.inner.resolved(s)

    def _id(self, rec):
        ent = self.perf.evlist.for_trailer(rec.data)
        if ent is None:
            return None, None
        tr = ent.layout.parse_trailer(rec.data)
        return tr.get("tid"), tr.get("time")

    def close(self):
        self.core.finish()
        inner = self.inner
        inner.report = self.report
        inner.close()

    # -- each wait --------------------------------------------------------------------------------
    def _wait(self, iv):
        s = iv.sample
        ns = self._count_wait(iv, s.comm or iv.comm)
        if ns is None:
            return
        if self.estimate:               # each sample stands for ``period`` switches
            ns *= s.ref.period or 1
        self.threads[iv.tid][1][iv.state] += ns
        inner = self.inner
        if self.wall:
            inner.view = OFF_CPU
        comm = s.comm or iv.comm
        with self._named_as(s.tid, comm):
            self._hand(inner, s, comm, ns, iv)

    def _named_as(self, tid, comm):
        """Names taken now are those of the sample's time (PerfContext.named_as): a wait is
        handed on when it ends, the thread maybe gone by then."""
        ctx = getattr(self.inner, "ctx", None)
        return ctx.named_as(tid, comm) if ctx is not None else contextlib.nullcontext()

    def _hand(self, inner, s, comm, ns, iv):
        if self.counted:
            if self.chains:
                ips = tuple(s.kernel) + ((PERF_CONTEXT_USER,) + tuple(s.user) if s.outcome == STITCHED else ())
            else:
                ips = tuple(sample_ips(s))
            inner.resolved_counted(s.pid, s.tid, comm, ips, ns, s.ref.entry.index, 1,
                                   _KEY[s.reason or s.outcome], iv.start, iv.end, 1 if s.after_stack else 0)
        else:
            inner.resolved_ips(s.pid, s.tid, comm, tuple(sample_ips(s)), ns, s.ref.entry.index)


def warn_estimate(plan, path, quiet):
    """Say when the file cannot give time (frequency_note)."""
    line = frequency_note(plan, path)
    if line and not quiet:
        sys.stderr.write(line + "\n")


def _ms(ns):
    return "%.3f" % (ns / 1e6)


def tables(feed):
    """The off-CPU report: per thread its time off the CPU by state, its on-CPU samples and how
    its waits ended; then every switch-out, counted once (offcpu.OffCpu.conserved)."""
    from .tables import table
    core = feed.core
    states = sorted({st for _c, by, _e in feed.threads.values() for st in by})
    ends = [e for e in O.ENDINGS + O.UNENDED if core.ended.get(e) or core.unended.get(e)]
    rows = []
    tids = set(feed.threads) | set(feed.on_cpu)
    for tid in sorted(tids, key=lambda t: (t is None, t or 0)):
        comm, by, ended = feed.threads.get(tid) or [None, Counter(), Counter()]
        rows.append([comm or "", tid, _ms(sum(by.values()))] + [_ms(by.get(st, 0)) for st in states]
                    + [feed.on_cpu.get(tid, 0)] + [ended.get(e, 0) for e in ends])
    heads = ["comm", "tid", "off-CPU ms"] + ["%s ms" % st for st in states] + ["on-CPU samples"] \
        + ["ended: %s" % e if e in O.ENDINGS else "never ended: %s" % e for e in ends]
    counts = [["sched_switch samples", core.switch_outs + feed.unreadable],
              ["  raw fields unreadable", feed.unreadable],
              ["  preempted, not counted (--preempted counts them)", core.skipped_preempted]]
    counts += [["  waits ended by %s" % e, core.ended.get(e, 0)] for e in O.ENDINGS]
    counts += [["  waits never ended: %s" % e, core.unended.get(e, 0)] for e in O.UNENDED]
    counts.append(["switch-outs", core.switch_outs, "" if core.conserved() else "COUNTS DO NOT ADD UP"])
    head = "off-CPU time%s: waits from each switch-out to the first sign the task ran again" % (
        " (ESTIMATES: sampled by frequency)" if feed.estimate else "")
    return "%s\n%s\n\n%s\n" % (head, table(rows, heads), table(counts, ["switch-outs", "count", ""]))


def to_json(feed):
    """The off-CPU report as JSON: summary() and per thread its ns by state and endings."""
    out = feed.summary()
    out["threads"] = [{"tid": tid, "comm": comm, "ns_by_state": dict(by), "waits": dict(ended),
                       "on_cpu_samples": feed.on_cpu.get(tid, 0)}
                      for tid, (comm, by, ended) in sorted(feed.threads.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))]
    return out
