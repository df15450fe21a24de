"""perf script's default text layout, so speedscope, Firefox Profiler and stackcollapse-perf.pl
read it as they read perf's own (builtin-script.c, perf_sample__fprintf_start and process_event):

    comm %7d [%03d] %5lu.%06lu: %10lu %*s:       a sample of an event with a callchain,
    \t%16lx sym+0xoff (dso)                      then one frame a line, innermost first,
    (blank line)                                 and a blank line
    %16s %7d [%03d] %5lu.%06lu: %10lu %*s:  %16lx sym+0xoff (dso)
                                                 without one: comm padded, the sample's ip
                                                 on the header line, no blank line

The event name is right-aligned to the longest name of the session (evlist__max_name_len).

A sample's text is made when its outcome is known (names then see the maps as they were when its
stack was taken) and written when its turn comes in time order.

With a ``namer`` (the trace side's), samples come to named() with their outcome final, in time
order, and ``header(s)`` is the side's own header line.
"""
from ..abi import consts as C
from .frames import KeyedStacks, StackCache, frame_lines, name_ips, sample_ips, sample_period, weight
from .sink import ORDERED, Sink


def _frame_lines(_pid, frames):
    return frame_lines(frames)


class PerfScript(Sink):
    takes = ORDERED

    def __init__(self, f, ctx, max_stack=127, namer=None, header=None):
        self.f, self.ctx, self.max_stack = f, ctx, max_stack
        if namer is None:
            self._frames = StackCache(ctx, _frame_lines)
        else:
            self._frames = KeyedStacks(namer, lambda _pid, frames: frame_lines(frames[:max_stack]))
        self.header = header
        self._ready = {}          # sample number -> text, until its turn (the C engine's path)
        self._name_width = None   # taken at the first sample, as perf does: names come first
        self._out = []            # named() samples' text not yet written (one write for many)

    def resolved(self, s):
        """A sample from the Python path (PerfFeed)."""
        ips = tuple(sample_ips(s))
        s.ref.text = self._text(s.pid, s.tid, self.ctx.comm(s), ips[:self.max_stack], sample_period(s),
                                s.ref.entry, s.cpu, s.time, s.ref.parsed.ip)

    def sample(self, s):
        self.f.write(s.ref.text)

    def resolved_ips(self, pid, tid, comm, ips, period, entry, cpu, time, number, ip):
        """A sample from the C engine (perfdata/engine.py): ``ips`` as native u64 bytes, ``ip``
        its own ip when its attr has no callchain."""
        ent = self.ctx.perf.evlist.entries[entry]
        if self.max_stack is not None:
            ips = ips[:8 * self.max_stack]
        self._ready[number] = self._text(pid, tid, self.ctx.comm_of(tid, comm), ips,
                                         weight("period", period, ent.attr), ent, cpu, time, ip)

    def turn(self, number):
        """The C engine's time order: sample ``number`` is next."""
        self.f.write(self._ready.pop(number))

    def named(self, s):
        """A sample whose frames the namer names: its header, its frames, a blank line."""
        out = self._out
        out.append(self.header(s) + self._frames.get(s) + "\n\n")
        if len(out) >= 256:
            self.f.write("".join(out))
            out.clear()

    def _text(self, pid, tid, comm, ips, period, entry, cpu, time, ip=None):
        chain = entry.layout.has_callchain
        head = ("%s %7d " if chain else "%16s %7d ") % (comm, tid if tid is not None else -1)
        if entry.layout.sample_type & C.PERF_SAMPLE_CPU:
            head += "[%03d] " % cpu
        if time is not None:
            head += "%5d.%06d: " % (time // 1000000000, time % 1000000000 // 1000)
        if self._name_width is None:
            self._name_width = max(len(e.name) for e in self.ctx.perf.evlist.entries)
        head = "%s%10d %*s: " % (head, period, self._name_width, entry.name)
        if chain:
            return "%s%s\n\n" % (head, self._frames.get(pid, ips))
        if ip is None:            # no PERF_SAMPLE_IP: nothing to show
            return head + "\n"
        return "%s %s\n" % (head, _frame_lines(pid, name_ips(pid, (ip,), self.ctx))[2:])

    def close(self):
        if self._out:
            self.f.write("".join(self._out))
            self._out.clear()
