"""StitchReport: every count the stitcher keeps, and the invariant that they add up.

    samples == stitched + passed + sum(unmatched.values())
"""
from collections import Counter

from .model import PASSED, STITCHED

KEEP_FIRST = 20     # unmatched samples and orphan stacks listed one by one


class StitchReport:
    def __init__(self):
        self.samples = self.stitched = self.stitched_after_stack = self.passed = 0
        self.unmatched = Counter()
        self.deferred_records = self.duplicate_deferred = self.orphan_deferred = 0
        self.dropped_frames = 0
        self.lost_records = self.lost_events = 0
        self.max_pending = 0
        self.by_thread = {}     # tid -> [comm, Counter(outcome or reason)]
        self.by_cpu = {}        # cpu -> Counter
        self.first_unmatched = []   # (time, tid, cookie, reason)
        self.orphans = []           # (time, tid, cookie)
        self.extra = {}             # front-end counters (records by type, unordered, ...)

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
                self.first_unmatched.append((s.time, s.tid, s.cookie, s.reason))
        th = self.by_thread.get(s.tid)
        if th is None:
            th = self.by_thread[s.tid] = [s.comm, Counter()]
        elif s.comm:
            th[0] = s.comm
        th[1][key] += 1
        c = self.by_cpu.get(s.cpu)
        if c is None:
            c = self.by_cpu[s.cpu] = Counter()
        c[key] += 1

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
        return {
            "samples": self.samples, "stitched": self.stitched,
            "stitched_after_stack": self.stitched_after_stack, "passed": self.passed,
            "unmatched": dict(sorted(self.unmatched.items())),
            "deferred_records": self.deferred_records, "duplicate_deferred": self.duplicate_deferred,
            "orphan_deferred": self.orphan_deferred, "dropped_frames": self.dropped_frames,
            "lost_records": self.lost_records, "lost_events": self.lost_events,
            "max_pending": self.max_pending,
            "first_unmatched": [{"time": t, "tid": tid, "cookie": c, "reason": r}
                                for t, tid, c, r in self.first_unmatched],
            "orphans": [{"time": t, "tid": tid, "cookie": c} for t, tid, c in self.orphans],
            "by_thread": {str(tid): {"comm": comm, **dict(cnt)}
                          for tid, (comm, cnt) in sorted(self.by_thread.items())},
            "by_cpu": {str(cpu): dict(cnt) for cpu, cnt in sorted(self.by_cpu.items(),
                                                                  key=lambda kv: (kv[0] is None, kv[0] or 0))},
            "conserved": self.conserved(),
            **self.extra,
        }

    @classmethod
    def from_json(cls, d):
        """Rebuild the counts from to_json() (for the report that travels with a stitched file)."""
        r = cls()
        for k in ("samples", "stitched", "stitched_after_stack", "passed", "deferred_records",
                  "duplicate_deferred", "orphan_deferred", "dropped_frames", "lost_records",
                  "lost_events", "max_pending"):
            setattr(r, k, d.get(k, 0))
        r.unmatched = Counter(d.get("unmatched", {}))
        r.first_unmatched = [(u["time"], u["tid"], u["cookie"], u["reason"]) for u in d.get("first_unmatched", [])]
        r.orphans = [(o["time"], o["tid"], o["cookie"]) for o in d.get("orphans", [])]
        for tid, v in d.get("by_thread", {}).items():
            v = dict(v)
            comm = v.pop("comm", None)
            r.by_thread[int(tid)] = [comm, Counter(v)]
        for cpu, v in d.get("by_cpu", {}).items():
            r.by_cpu[None if cpu == "None" else int(cpu)] = Counter(v)
        known = set(cls().to_json())
        r.extra = {k: v for k, v in d.items() if k not in known}
        return r
