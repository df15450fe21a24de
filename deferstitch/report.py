"""StitchReport: every count the stitcher keeps, and the invariant that they add up.

    samples == stitched + passed + sum(unmatched.values())

Its JSON (``to_json``, version ``VERSION``) puts the core's counts at the top and what one front
end counted (records by type, sorter, events by name, ...) under that front end's own key
(``source``: "perf" or "ftrace"), so that the top level means the same for every input.
"""
from collections import Counter

from .model import NO_COOKIE, PASSED, STITCHED

KEEP_FIRST = 20     # unmatched samples and orphan stacks listed one by one (and _twin.h's)
VERSION = 1         # of to_json()'s shape; reports saved before it (no "version") had the
                    # front end's counters at the top level: from_json() still reads them
CORE_COUNTS = ("samples", "stitched", "stitched_after_stack", "passed", "deferred_records",
               "duplicate_deferred", "orphan_deferred", "dropped_frames", "lost_records",
               "lost_events", "max_pending")


def idle_comm(tid):
    """tid 0 is the idle task, which has no COMM record: "swapper", as perf script names it."""
    return "swapper" if tid == 0 else None


class StitchReport:
    def __init__(self):
        self.samples = self.stitched = self.stitched_after_stack = self.passed = 0
        self.unmatched = Counter()
        self.deferred_records = self.duplicate_deferred = self.orphan_deferred = 0
        self.dropped_frames = 0
        self.lost_records = self.lost_events = 0
        self.max_pending = 0
        self.deferred_layout = "cookie"   # "no-cookie": matched by task order (stitcher.py)
        self.cells = {}         # (tid, cpu, outcome or reason) -> samples: one lookup a sample
        self.comms = {}         # tid -> comm
        self._by_thread = self._by_cpu = None   # views, built from cells when asked
        self.first_unmatched = []   # (time, tid, cookie, reason)
        self.orphans = []           # (time, tid, cookie)
        self.source = None          # the front end that fed it: "perf", "ftrace"
        self.extra = {}             # that front end's counters (records by type, unordered, ...)
        self.error = None           # why the input stopped early (damage), None when read whole
        self.selection = None       # the options that chose the samples counted (selection.py)
        self.not_chosen = 0         # samples the selection left out (stitched all the same)

    def count(self, s):
        """Account one sample whose outcome is final."""
        key = s.outcome if s.outcome in (STITCHED, PASSED) else s.reason
        if s.outcome == STITCHED:
            self.stitched += 1
            if s.after_stack:
                self.stitched_after_stack += 1
        elif s.outcome == PASSED:
            self.passed += 1
        else:
            self.unmatched[s.reason] += 1
            if len(self.first_unmatched) < KEEP_FIRST:
                self.first_unmatched.append((s.time, s.tid, None if s.cookie == NO_COOKIE
                                             else s.cookie, s.reason))
        cell = (s.tid, s.cpu, key)
        cells = self.cells
        cells[cell] = cells.get(cell, 0) + 1
        if s.comm:
            self.comms[s.tid] = s.comm
        self._by_thread = self._by_cpu = None

    @property
    def by_thread(self):
        """tid -> [comm, Counter(outcome or reason)]"""
        if self._by_thread is None:
            out = {}
            for (tid, _cpu, key), n in self.cells.items():
                th = out.get(tid)
                if th is None:
                    th = out[tid] = [self.comms.get(tid) or idle_comm(tid), Counter()]
                th[1][key] += n
            self._by_thread = out
        return self._by_thread

    @property
    def by_cpu(self):
        """cpu -> Counter(outcome or reason)"""
        if self._by_cpu is None:
            out = {}
            for (_tid, cpu, key), n in self.cells.items():
                out.setdefault(cpu, Counter())[key] += n
            self._by_cpu = out
        return self._by_cpu

    def orphan(self, time, tid, cookie):
        self.orphan_deferred += 1
        if len(self.orphans) < KEEP_FIRST:
            self.orphans.append((time, tid, cookie))

    @property
    def total_unmatched(self):
        return sum(self.unmatched.values())

    def conserved(self):
        return self.samples == self.stitched + self.passed + self.total_unmatched

    def to_json(self):
        """One object: version, complete/error, the core counts, the views, then the front
        end's counters under its own key (README, "The report's JSON")."""
        out = {
            "version": VERSION, "complete": self.error is None, "error": self.error,
            "samples": self.samples, "stitched": self.stitched,
            "stitched_after_stack": self.stitched_after_stack, "passed": self.passed,
            "unmatched": dict(sorted(self.unmatched.items())),
            "deferred_records": self.deferred_records, "duplicate_deferred": self.duplicate_deferred,
            "orphan_deferred": self.orphan_deferred, "dropped_frames": self.dropped_frames,
            "lost_records": self.lost_records, "lost_events": self.lost_events,
            "max_pending": self.max_pending, "deferred_layout": self.deferred_layout,
            "first_unmatched": [{"time": t, "tid": tid, "cookie": c, "reason": r}
                                for t, tid, c, r in self.first_unmatched],
            "orphans": [{"time": t, "tid": tid, "cookie": c} for t, tid, c in self.orphans],
            "by_thread": {str(tid): {"comm": comm, **dict(cnt)}     # a sample may lack its tid
                          for tid, (comm, cnt) in sorted(self.by_thread.items(),
                                                         key=lambda kv: (kv[0] is None, kv[0] or 0))},
            "by_cpu": {str(cpu): dict(cnt) for cpu, cnt in sorted(self.by_cpu.items(),
                                                                  key=lambda kv: (kv[0] is None, kv[0] or 0))},
            "conserved": self.conserved(),
        }
        if self.selection is not None:      # only the chosen samples are counted above
            out["selection"] = {"options": self.selection, "not_chosen": self.not_chosen}
        if self.source is not None:
            out[self.source] = dict(self.extra)
        return out

    @classmethod
    def from_json(cls, d):
        """Rebuild the counts from to_json() (for the report that travels with a stitched file)."""
        r = cls()
        for k in CORE_COUNTS:
            setattr(r, k, d.get(k, 0))
        r.error = d.get("error")
        r.deferred_layout = d.get("deferred_layout", "cookie")
        if "selection" in d:
            r.selection = d["selection"].get("options")
            r.not_chosen = d["selection"].get("not_chosen", 0)
        r.unmatched = Counter(d.get("unmatched", {}))
        r.first_unmatched = [(u["time"], u["tid"], u["cookie"], u["reason"]) for u in d.get("first_unmatched", [])]
        r.orphans = [(o["time"], o["tid"], o["cookie"]) for o in d.get("orphans", [])]
        r._by_thread, r._by_cpu = {}, {}       # a saved report: its views are all there is
        for tid, v in d.get("by_thread", {}).items():
            v = dict(v)
            comm = v.pop("comm", None)
            tid = None if tid == "None" else int(tid)
            r._by_thread[tid] = [comm or (idle_comm(tid) if tid is not None else None), Counter(v)]
        for cpu, v in d.get("by_cpu", {}).items():
            r._by_cpu[None if cpu == "None" else int(cpu)] = Counter(v)
        known = set(cls().to_json()) | {"selection"}
        if "version" in d:
            r.source = next((k for k in d if k not in known), None)
            r.extra = dict(d[r.source]) if r.source else {}
        else:                                   # before VERSION 1: a perf report, flat
            r.source = "perf"
            r.extra = {k: v for k, v in d.items() if k not in known}
        return r
