"""FlameGraph folded stacks: ``comm;outermost;…;innermost COUNT``, root first, sorted.

Frames without a symbol are named after their dso, as stackcollapse-perf.pl does: ``[libc.so.6]``.
"""
import os
from collections import Counter

from .frames import UNKNOWN, StackCache, counted_weight, sample_ips, weight
from .sink import COUNTED, Sink


def frame_name(sym, dso):
    if sym is not None:
        return sym
    return _dso_names.get(dso) or _dso_names.setdefault(
        dso, "[%s]" % os.path.basename(dso.strip("[]")) if dso != UNKNOWN else UNKNOWN)


_dso_names = {}      # dso -> "[basename]": few dsos, many frames


def _line(_pid, frames):
    """";outermost;...;innermost" of named frames (innermost first)."""
    return "".join(";" + frame_name(sym, dso) for _ip, sym, _off, dso in reversed(frames))


class Folded(Sink):
    """Counts folded lines. A sample's line is named when its outcome is known (see
    PerfFeed._resolved), through a StackCache."""

    takes = COUNTED

    def __init__(self, f, ctx, weight="samples"):
        self.f, self.ctx, self.weight = f, ctx, weight
        self.stacks = Counter()
        self._lines = StackCache(ctx, _line)

    def resolved(self, s):
        """A sample from the Python path (PerfFeed)."""
        self._add(s.pid, self.ctx.comm(s), tuple(sample_ips(s)),
                  weight(self.weight, s.ref.period, s.ref.entry.attr))

    def resolved_counted(self, pid, tid, comm, ips, period, entry, count, _key, _first, _last, _after):
        """``count`` samples of one stack from the C engine (perfdata/engine.py, MODE_COUNTED):
        ``ips`` as native u64 bytes, ``period`` their sum (None: the attr's fixed period)."""
        self._add(pid, self.ctx.comm_of(tid, comm), ips,
                  counted_weight(self.weight, count, period, self.ctx.perf.evlist.entries, entry))

    def _add(self, pid, comm, ips, w):
        self.stacks[comm.replace(" ", "_") + self._lines.get(pid, ips)] += w

    def close(self):
        for key in sorted(self.stacks):
            self.f.write("%s %d\n" % (key, self.stacks[key]))
