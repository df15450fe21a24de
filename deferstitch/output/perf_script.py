"""perf script's default text layout, so speedscope, Firefox Profiler and stackcollapse-perf.pl
read it as they read perf's own:

    comm   tid [cpu] secs.usecs: period event:
    \t%16lx sym+0xoff (dso)            one frame a line, innermost first
    (blank line between samples)

A sample's text is made when its outcome is known (names then see the maps as they were when its
stack was taken) and written when its turn comes in time order.
"""
from ..abi import consts as C
from .frames import StackCache, sample_ips, sample_period, sym_text, weight


def _frame_lines(_pid, frames):
    return "".join("\n\t%16x %s (%s)" % (ip, sym_text(sym, off), dso) for ip, sym, off, dso in frames)


class PerfScript:
    def __init__(self, f, ctx, max_stack=127):
        self.f, self.ctx, self.max_stack = f, ctx, max_stack
        self._frames = StackCache(ctx, _frame_lines)
        self._ready = {}          # sample number -> text, until its turn (the C engine's path)

    def record(self, rec):
        pass

    def resolved(self, s):
        """A sample from the Python path (PerfFeed)."""
        ips = tuple(sample_ips(s))
        s.ref.text = self._text(s.pid, s.tid, self.ctx.comm(s), ips[:self.max_stack], sample_period(s),
                                s.ref.entry, s.cpu, s.time)

    def sample(self, s):
        self.f.write(s.ref.text)

    def resolved_ips(self, pid, tid, comm, ips, period, entry, cpu, time, number):
        """A sample from the C engine (perfdata/engine.py): ``ips`` as native u64 bytes."""
        ent = self.ctx.perf.evlist.entries[entry]
        if self.max_stack is not None:
            ips = ips[:8 * self.max_stack]
        self._ready[number] = self._text(pid, tid, self.ctx.comm_of(tid, comm), ips,
                                         weight("period", period, ent.attr), ent, cpu, time)

    def turn(self, number):
        """The C engine's time order: sample ``number`` is next."""
        self.f.write(self._ready.pop(number))

    def _text(self, pid, tid, comm, ips, period, entry, cpu, time):
        head = "%s %7d " % (comm, tid if tid is not None else -1)
        if entry.layout.sample_type & C.PERF_SAMPLE_CPU:
            head += "[%03d] " % cpu
        if time is not None:
            head += "%5d.%06d: " % (time // 1000000000, time % 1000000000 // 1000)
        return "%s%10d %s: %s\n\n" % (head, period, entry.name, self._frames.get(pid, ips))

    def close(self):
        pass
