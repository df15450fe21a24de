"""pprof's profile.proto, gzip'd: samples (count and period), locations leaf first, functions,
mappings per dso, and labels thread/tid/outcome/reason so that unmatched samples stay visible
(``pprof -tagfocus reason=deferred-lost``). An unmatched sample also gets an outermost frame
``[user stack lost: REASON]``: where its user part would be, and never a sample without frames
(pprof shows those nowhere).

Samples with the same locations and labels are one pprof sample with the values summed, as
pprof's own merge does: the profile grows with distinct stacks per thread, not with the file."""
import gzip

from ..model import PASSED, REASONS, STITCHED, UNMATCHED
from .frames import StackCache, sample_ips, sample_period
from .pprof_schema import messages

_OUTCOMES = [(STITCHED, None), (PASSED, None)] + [(UNMATCHED, r) for r in REASONS]   # engine.KEYS


class Pprof:
    def __init__(self, f, ctx):
        self.f, self.ctx = f, ctx
        M = messages()
        self.prof = M["Profile"]()
        self.strings = {"": 0}
        self.prof.string_table.append("")
        self.functions, self.locations, self.mappings = {}, {}, {}
        vt = self.prof.sample_type.add()
        vt.type, vt.unit = self.s("samples"), self.s("count")
        vt = self.prof.sample_type.add()
        vt.type, vt.unit = self.s("cpu"), self.s("nanoseconds")
        self.prof.period_type.type, self.prof.period_type.unit = self.s("cpu"), self.s("nanoseconds")
        self.first = self.last = None
        self._locs = StackCache(ctx, self._location_ids)   # (pid, ips) -> location ids
        self._samples = {}        # (locations, thread, outcome, reason, tid) -> [values, labels]
                                  # (plain lists while counting; profile.proto messages at close)

    def s(self, text):
        i = self.strings.get(text)
        if i is None:
            i = self.strings[text] = len(self.prof.string_table)
            self.prof.string_table.append(text)
        return i

    def _mapping(self, dso, m):
        mid = self.mappings.get(dso)
        if mid is None:
            mp = self.prof.mapping.add()
            mid = mp.id = self.mappings[dso] = len(self.mappings) + 1
            mp.filename = self.s(dso)
            if m is not None:
                mp.memory_start, mp.memory_limit, mp.file_offset = m.start, m.end, m.pgoff
                if m.build_id:
                    mp.build_id = self.s(m.build_id)
            mp.has_functions = True
        return mid

    def _location(self, pid, ip, sym, off, dso):
        key = (dso, ip, sym)
        lid = self.locations.get(key)
        if lid is not None:
            return lid
        m = self.ctx.maps.find(pid, ip)
        loc = self.prof.location.add()
        lid = loc.id = self.locations[key] = len(self.locations) + 1
        loc.mapping_id = self._mapping(dso, m)
        loc.address = ip
        name = sym if sym is not None else "[%s]" % dso.strip("[]").rsplit("/", 1)[-1]
        fkey = (name, dso)
        fid = self.functions.get(fkey)
        if fid is None:
            fn = self.prof.function.add()
            fid = fn.id = self.functions[fkey] = len(self.functions) + 1
            fn.name = fn.system_name = self.s(name)
            fn.filename = self.s(dso)
        loc.line.add().function_id = fid
        return lid

    def record(self, rec):
        pass

    def _location_ids(self, pid, frames):
        known, ids = self.locations, []
        for ip, sym, off, dso in frames:
            lid = known.get((dso, ip, sym))
            ids.append(lid if lid is not None else self._location(pid, ip, sym, off, dso))
        return tuple(ids)

    def resolved(self, s):
        """A sample from the Python path (PerfFeed)."""
        self._add(s.pid, s.tid, self.ctx.comm(s), tuple(sample_ips(s)), sample_period(s), s.time,
                  s.outcome, s.reason)

    def resolved_counted(self, pid, tid, comm, ips, period, entry, count, key, first, last):
        """``count`` samples of one stack and outcome from the C engine (perfdata/engine.py,
        MODE_COUNTED): ``ips`` as native u64 bytes, ``period`` their sum (None: the attr's fixed
        period), ``key`` the outcome's number (engine.KEYS), times the first and last."""
        outcome, reason = _OUTCOMES[key]
        attr = self.ctx.perf.evlist.entries[entry].attr
        self._add(pid, tid, self.ctx.comm_of(tid, comm), ips,
                  period if period is not None else count * attr.sample_period, first, outcome, reason,
                  count, last)

    def _add(self, pid, tid, comm, ips, period, time, outcome, reason, count=1, last=None):
        locs = self._locs.get(pid, ips)
        if reason:
            locs += (self._location(pid, 0, "[user stack lost: %s]" % reason, 0, "[deferstitch]"),)
        tid = tid if tid is not None else -1
        key = (locs, comm, outcome, reason, tid)
        smp = self._samples.get(key)
        if smp is None:         # strings interned now, in the order they are first met
            labels = [(self.s(lkey), self.s(val))
                      for lkey, val in (("thread", comm), ("outcome", outcome), ("reason", reason)) if val]
            smp = self._samples[key] = [0, 0, locs, labels, self.s("tid"), tid]
        smp[0] += count
        smp[1] += period
        if time is not None:
            last = time if last is None else last
            self.first = time if self.first is None else min(self.first, time)
            self.last = last if self.last is None else max(self.last, last)

    def sample(self, s):
        pass

    def close(self):
        add = self.prof.sample.add
        for count, period, locs, labels, tid_key, tid in self._samples.values():
            smp = add()
            smp.location_id.extend(locs)
            smp.value.extend([count, period])
            for k, v in labels:
                lab = smp.label.add()
                lab.key, lab.str = k, v
            lab = smp.label.add()
            lab.key, lab.num = tid_key, tid
        if self.first is not None:     # perf's clock is not wall time: no time_nanos
            self.prof.duration_nanos = self.last - self.first
        self.f.write(gzip.compress(self.prof.SerializeToString()))
