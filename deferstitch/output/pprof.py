"""pprof's profile.proto, gzip'd: samples (count and period), locations leaf first, functions,
mappings per dso, and labels thread/tid/outcome/reason so that unmatched samples stay visible
(``pprof -tagfocus reason=deferred-lost``). An unmatched sample also gets an outermost frame
``[user stack lost: REASON]``: where its user part would be, and never a sample without frames
(pprof shows those nowhere).

Samples with the same locations and labels are one pprof sample with the values summed, as
pprof's own merge does: the profile grows with distinct stacks per thread, not with the file.
It is held as it will be written (pprof_wire.py): each distinct stack once as its packed
location ids, each label set once as bytes, and per sample one dict entry (an int key) and two
array slots, so memory follows the output's size, not Python objects per sample."""
from array import array

from ..symbols.resolver import INLINED
from ..model import OUTCOME_KEYS, PASSED, REASONS, STITCHED, UNMATCHED
from . import pprof_wire as W
from .frames import StackCache, counted_weight, lost_frame_name, sample_ips, sample_period
from .sink import COUNTED, Sink

_OUTCOMES = [(STITCHED, None), (PASSED, None)] + [(UNMATCHED, r) for r in REASONS]   # by OUTCOME_KEYS
_KEY = {k: i for i, k in enumerate(OUTCOME_KEYS)}        # an outcome or reason -> its number
_TID_BITS = 33              # a sample's key: stack, label set, tid + its 33 low bits (-1: no tid)
_TID_MASK = (1 << _TID_BITS) - 1
_U64_MAX = (1 << 64) - 1


class Pprof(Sink):
    takes = COUNTED

    def __init__(self, f, ctx):
        self.f, self.ctx = f, ctx
        self.strings = {}
        self._strings = []                  # string_table entries, encoded, in id order
        self.functions, self.locations, self.mappings = {}, {}, {}
        self._tables = {W.MAPPING: [], W.LOCATION: [], W.FUNCTION: []}   # encoded, in id order
        self.s("")
        self._head = W.field(W.SAMPLE_TYPE, W.value_type(self.s("samples"), self.s("count"))) \
            + W.field(W.SAMPLE_TYPE, W.value_type(self.s("cpu"), self.s("nanoseconds")))
        self._period_type = W.field(W.PERIOD_TYPE, W.value_type(self.s("cpu"), self.s("nanoseconds")))
        self.first = self.last = None
        self._locs = StackCache(ctx, self._stack_of)    # (pid, ips) -> stack number
        self._stacks = {}          # packed location ids -> stack number
        self._stack_bodies = []    # stack number -> packed location ids
        self._lost = {}            # (stack, outcome number) -> the stack with its [user stack lost] frame
        self._labels = {}          # (thread, outcome number) -> label set number
        self._label_bytes = []     # label set number -> its encoded labels
        self._tid_key = None
        self._samples = {}         # (stack << 32 | label set) << 33 | tid -> sample number
        self._counts, self._periods = array("Q"), array("Q")    # per sample number

    def s(self, text):
        i = self.strings.get(text)
        if i is None:
            i = self.strings[text] = len(self._strings)
            self._strings.append(W.string(text))
        return i

    def _mapping(self, dso, m):
        mid = self.mappings.get(dso)
        if mid is None:
            mid = self.mappings[dso] = len(self.mappings) + 1
            filename = self.s(dso)
            if m is not None:
                build_id = self.s(m.build_id) if m.build_id else 0
                self._tables[W.MAPPING].append(W.mapping(mid, m.start, m.end, m.pgoff, filename, build_id))
            else:
                self._tables[W.MAPPING].append(W.mapping(mid, 0, 0, 0, filename, 0))
        return mid

    def _location(self, pid, ip, sym, off, dso, inlined=()):
        key = (dso, ip, sym) + inlined
        lid = self.locations.get(key)
        if lid is not None:
            return lid
        m = self.ctx.maps.find(pid, ip)
        lid = self.locations[key] = len(self.locations) + 1
        mid = self._mapping(dso, m)
        name = sym if sym is not None else "[%s]" % dso.strip("[]").rsplit("/", 1)[-1]
        self._tables[W.LOCATION].append(W.location(lid, mid, ip, self._function(name, dso),
                                                   [self._function(n, dso) for n in inlined]))
        return lid

    def _function(self, name, dso):
        fkey = (name, dso)
        fid = self.functions.get(fkey)
        if fid is None:
            fid = self.functions[fkey] = len(self.functions) + 1
            sname = self.s(name)
            self._tables[W.FUNCTION].append(W.function(fid, sname, sname, self.s(dso)))
        return fid

    def _stack(self, body):
        n = self._stacks.get(body)
        if n is None:
            n = self._stacks[body] = len(self._stack_bodies)
            self._stack_bodies.append(body)
        return n

    def _stack_of(self, pid, frames):
        """The stack number of named frames (innermost first): their location ids, packed."""
        known, ids, inlined = self.locations, [], ()
        for ip, sym, off, dso in frames:
            if dso == INLINED:          # a Line of the next frame's Location (same address)
                inlined += (sym,)
                continue
            lid = known.get((dso, ip, sym) + inlined)
            ids.append(lid if lid is not None else self._location(pid, ip, sym, off, dso, inlined))
            inlined = ()
        return self._stack(W.packed(ids))

    def resolved(self, s):
        """A sample from the Python path (PerfFeed)."""
        self.resolved_counted(s.pid, s.tid, s.comm, tuple(sample_ips(s)), sample_period(s), None, 1,
                              _KEY[s.reason if s.reason else s.outcome], s.time, s.time, None)

    def resolved_counted(self, pid, tid, comm, ips, period, entry, count, key, first, last, _after):
        """``count`` samples of one stack and outcome from the C engine (perfdata/engine.py,
        MODE_COUNTED; one from the Python path): ``ips`` native u64 bytes (a tuple), ``period``
        their sum (None: the attr's fixed period), ``key`` the outcome's number
        (model.OUTCOME_KEYS), ``first`` and ``last`` their times (a sink.Counted). One call per distinct (thread, stack,
        outcome): its cost is most of what pprof costs over folded, hence the inlined lookups."""
        comm = self.ctx.comm_of(tid, comm)
        period = counted_weight("period", count, period, self.ctx.perf.evlist.entries, entry)
        stack = self._locs.get(pid, ips)
        if key > 1:                     # unmatched: the stack ends in [user stack lost: reason]
            lost = self._lost.get((stack, key))
            if lost is None:
                lid = self._location(pid, 0, lost_frame_name(OUTCOME_KEYS[key]), 0, "[deferstitch]")
                lost = self._lost[(stack, key)] = self._stack(self._stack_bodies[stack] + W.varint(lid))
            stack = lost
        labels = self._labels.get((comm, key))
        if labels is None:      # strings interned now, in the order they are first met
            outcome, reason = _OUTCOMES[key]
            labels = self._labels[(comm, key)] = len(self._label_bytes)
            self._label_bytes.append(b"".join(W.label(self.s(k), self.s(v)) for k, v in
                                              (("thread", comm), ("outcome", outcome), ("reason", reason)) if v))
            self._tid_key = self.s("tid")
        skey = (stack << 32 | labels) << _TID_BITS | ((tid if tid is not None else -1) & _TID_MASK)
        samples, counts, periods = self._samples, self._counts, self._periods
        i = samples.get(skey)
        if i is None:
            samples[skey] = len(counts)
            counts.append(count)
            periods.append(period if period <= _U64_MAX else _U64_MAX)
        else:
            counts[i] += count
            p = periods[i] + period
            periods[i] = p if p <= _U64_MAX else _U64_MAX
        if first is not None:
            if self.first is None or first < self.first:
                self.first = first
            if last is None:
                last = first
            if self.last is None or last > self.last:
                self.last = last

    def close(self):
        out = W.GzipProfile(self.f)
        out.write(self._head)
        stacks = [W.locations_field(b) for b in self._stack_bodies]
        labels, tids, counts, periods = self._label_bytes, {}, self._counts, self._periods
        mask, varint, parts = (1 << 32) - 1, W.varint, []
        encoded = {}                    # value -> varint: counts and periods repeat
        one = W.ONE_BYTE                # (Sample.value's packed length: at most 20)
        for key, i in self._samples.items():
            t = key & _TID_MASK
            tl = tids.get(t)
            if tl is None:
                tl = tids[t] = W.label(self._tid_key, 0, t if t != _TID_MASK else -1)
            key >>= _TID_BITS
            c, p = counts[i], periods[i]
            vc = encoded.get(c)
            if vc is None:
                vc = encoded[c] = varint(c)
            vp = encoded.get(p)
            if vp is None:
                vp = encoded[p] = varint(p if p <= W.INT64_MAX else W.INT64_MAX)
            if len(encoded) > 1 << 16:
                encoded.clear()
            body = b"".join((stacks[key >> 32], b"\x12", one[len(vc) + len(vp)], vc, vp,
                             labels[key & mask], tl))
            parts += (W.SAMPLE, varint(len(body)), body)        # W.sample(), inline: one per sample
            if len(parts) > 3000:
                out.write(b"".join(parts))
                parts.clear()
        out.write(b"".join(parts))
        for tag in (W.MAPPING, W.LOCATION, W.FUNCTION):
            for data in self._tables[tag]:
                out.write(data)
        for data in self._strings:
            out.write(data)
        if self.first is not None and self.last != self.first:    # perf's clock is not wall time: no time_nanos
            out.write(W.DURATION + W.varint(self.last - self.first))
        out.write(self._period_type)
        out.close()
