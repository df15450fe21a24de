"""pprof's profile.proto, gzip'd: samples (count and period), locations leaf first, functions,
mappings per dso, and labels thread/tid/outcome/reason so that unmatched samples stay visible
(``pprof -tagfocus reason=deferred-lost``). An unmatched sample also gets an outermost frame
``[user stack lost: REASON]``: where its user part would be, and never a sample without frames
(pprof shows those nowhere).

The samples are counted into a Profile (profile.py: samples with the same locations and labels
are one pprof sample with the values summed, as pprof's own merge does), which writes the file;
the fleet's pprof is the same Profile, filled from named stacks (from_folded()).
"""
from ..model import OUTCOME_KEYS, PASSED, REASONS, STITCHED, UNMATCHED
from ..symbols.resolver import INLINED
from . import pprof_wire as W
from .frames import StackCache, counted_weight, lost_frame_name
from .profile import Profile
from .sink import COUNTED, CountedSink

_OUTCOMES = [(STITCHED, None), (PASSED, None)] + [(UNMATCHED, r) for r in REASONS]   # by OUTCOME_KEYS


class Pprof(CountedSink):
    takes = COUNTED

    TYPES = {None: (("samples", "count"), ("cpu", "nanoseconds")),
             "off-cpu": (("waits", "count"), ("off-cpu", "nanoseconds")),       # --off-cpu
             "wall": (("samples", "count"), ("wall", "nanoseconds"))}           # --wall-clock

    def __init__(self, f, ctx, time=None):
        """``time``: the values' kind, a key of TYPES (None: on-CPU samples and their period)."""
        self.f, self.ctx = f, ctx
        types = self.TYPES[time]
        self.profile = Profile(types, types[1], tids=True)
        self._views = {}           # (stack, view) -> the stack under its [on-cpu]/[off-cpu] frame
        self._locs = StackCache(ctx, self._stack_of)    # (pid, ips) -> stack number
        self._lost = {}            # (stack, outcome number) -> the stack with its [user stack lost] frame

    def _location(self, pid, ip, sym, dso, inlined=()):
        """A new location: its mapping (the dso's first map met), function and inlined calls."""
        p = self.profile
        mid = p.mapping(dso, self.ctx.maps.find(pid, ip))
        name = sym if sym is not None else "[%s]" % dso.strip("[]").rsplit("/", 1)[-1]
        fid = p.function(name, dso)
        return p.location((dso, ip, sym) + inlined, mid, ip, fid, [p.function(n, dso) for n in inlined])

    def _stack_of(self, pid, frames):
        """The stack number of named frames (innermost first): their location ids, packed."""
        known, ids, inlined = self.profile.locations, [], ()
        for ip, sym, _off, dso in frames:
            if dso == INLINED:          # a Line of the next frame's Location (same address)
                inlined += (sym,)
                continue
            lid = known.get((dso, ip, sym) + inlined)
            ids.append(lid if lid is not None else self._location(pid, ip, sym, dso, inlined))
            inlined = ()
        return self.profile.stack(W.packed(ids))

    def resolved_counted(self, pid, tid, comm, ips, period, entry, count, key, first, last, _after):
        """``count`` samples of one stack and outcome from the C engine (perfdata/engine.py,
        MODE_COUNTED; one from the Python path): ``ips`` native u64 bytes (a tuple), ``period``
        their sum (None: the attr's fixed period), ``key`` the outcome's number
        (model.OUTCOME_KEYS), ``first`` and ``last`` their times (a sink.Counted). One call per
        distinct (thread, stack, outcome): its cost is most of what pprof costs over folded."""
        p = self.profile
        comm = self.ctx.comm_of(tid, comm)
        period = counted_weight("period", count, period, self.ctx, entry)
        stack = self._locs.get(pid, ips)
        if key > 1:                     # unmatched: the stack ends in [user stack lost: reason]
            lost = self._lost.get((stack, key))
            if lost is None:
                lid = p.locations.get(("[deferstitch]", 0, lost_frame_name(OUTCOME_KEYS[key])))
                if lid is None:
                    lid = self._location(pid, 0, lost_frame_name(OUTCOME_KEYS[key]), "[deferstitch]")
                lost = self._lost[(stack, key)] = p.outer(stack, lid)
            stack = lost
        if self.view is not None:       # the wall-clock view: its frame outermost
            viewed = self._views.get((stack, self.view))
            if viewed is None:
                lid = p.locations.get(("[deferstitch]", 0, self.view))
                if lid is None:
                    lid = self._location(pid, 0, self.view, "[deferstitch]")
                viewed = self._views[(stack, self.view)] = p.outer(stack, lid)
            stack = viewed
        outcome, reason = _OUTCOMES[key]    # (strings interned in the order they are first met)
        p.add(stack, p.labels((comm, key), (("thread", comm), ("outcome", outcome), ("reason", reason))),
              tid, (count, period))
        p.times(first, last)

    def close(self):
        self.profile.write(self.f)


def from_folded(lines, unit=("samples", "count"), profile=None, base=False):
    """The fleet's Profile from named stacks (``{"comm;outer;...;inner": weight}``, sorted): a
    location and a function per distinct frame name (addresses differ from host to host), leaf
    first, a ``thread`` label with the comm. ``profile``: fill that one (diff: NEW, then BASE);
    ``base``: the stacks are a diff's base, as ``pprof -diff_base`` takes it
    (internal/driver/fetch.go): labelled ``pprof::base=true`` and their values negated."""
    p = profile if profile is not None else Profile((unit,))
    known = p.locations
    tag, sign = ((("pprof::base", "true"),), -1) if base else ((), 1)
    for line in sorted(lines):
        comm, *stack = line.split(";")
        ids = []
        for fr in reversed(stack):
            lid = known.get(fr)
            ids.append(lid if lid is not None else p.location(fr, 0, 0, p.function(fr)))
        p.add(p.stack(W.packed(ids)), p.labels((comm, base), (("thread", comm),) + tag), None,
              (sign * lines[line],))
    return p


def folded_unit(weight, time=None):
    """The sample type of stacks counted by ``weight`` (folded's: samples, period or ns), ``time``
    the kind of ns (off-cpu, wall), as the single file's Pprof names them."""
    if weight == "ns":
        return Pprof.TYPES[time][1]
    return ("cpu", "nanoseconds") if weight == "period" else ("samples", "count")
