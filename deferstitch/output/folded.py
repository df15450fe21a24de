"""FlameGraph folded stacks: ``comm;outermost;…;innermost COUNT``, root first, sorted.

Frames without a symbol are named after their dso, as stackcollapse-perf.pl does: ``[libc.so.6]``
(frames.frame_name).
"""
from collections import Counter
from functools import partial

from .frames import KeyedStacks, StackCache, comm_name, counted_weight, frame_name
from .sink import COUNTED, CountedSink


def _line(_pid, frames, addressed=False):
    """";outermost;...;innermost" of named frames (innermost first); ``addressed``: a frame of
    no known file named by its address (frame_name)."""
    return "".join(";" + frame_name(sym, dso, addressed and ip) for ip, sym, _off, dso in reversed(frames))


class Folded(CountedSink):
    """Counts folded lines. A sample's line is named when its outcome is known (see
    PerfFeed._resolved), through a StackCache; with a ``namer`` (the trace side's), each
    sample given to named() through a KeyedStacks. With no file ``f``, ``stacks`` is the
    result (output/diff.py counts each side so)."""

    takes = COUNTED

    def __init__(self, f, ctx, weight="samples", namer=None):
        self.f, self.ctx, self.weight = f, ctx, weight
        self.stacks = Counter()
        self._lines = StackCache(ctx, _line) if namer is None else KeyedStacks(namer, partial(_line, addressed=True))

    def resolved_counted(self, pid, tid, comm, ips, period, entry, count, _key, _first, _last, _after):
        """``count`` samples of one stack (sink.Counted): ``ips`` as native u64 bytes (a tuple
        from the Python path), ``period`` their sum (None: the attr's fixed period)."""
        view = ";" + self.view if self.view else ""
        self.stacks[comm_name(self.ctx.comm_of(tid, comm)) + view + self._lines.get(pid, ips)] += \
            counted_weight(self.weight, count, period, self.ctx, entry)

    def named(self, s, weight=1):
        """A sample whose frames the namer names, its outcome final; it counts ``weight`` (1, or
        a wait's ns: tracecmd/offcpu.py), under ``view`` as resolved_counted's."""
        view = ";" + self.view if self.view else ""
        self.stacks[comm_name(s.comm or "<...>") + view + self._lines.get(s)] += weight

    def close(self):
        if self.f is not None:      # None: the stacks are kept for the caller (diff's sides)
            write(self.f, self.stacks)


def write(f, stacks):
    """``{"comm;outer;...;inner": weight}`` as folded lines, sorted (the fleet's too)."""
    for key in sorted(stacks):
        f.write("%s %d\n" % (key, stacks[key]))
