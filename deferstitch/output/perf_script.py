"""perf script's default text layout, so speedscope, Firefox Profiler and stackcollapse-perf.pl
read it as they read perf's own (builtin-script.c, perf_sample__fprintf_start and process_event):

    comm %7d [%03d] %5lu.%06lu: %10lu %*s:       a sample of an event with a callchain,
    \t%16lx sym+0xoff (dso)                      then one frame a line, innermost first,
    (blank line)                                 and a blank line
    %16s %7d [%03d] %5lu.%06lu: %10lu %*s:  %16lx sym+0xoff (dso)
                                                 without one: comm padded, the sample's ip
                                                 on the header line, no blank line

``fields`` (output/script_fields.py, ``script -F``) chooses the parts as perf's -F does; without
it every event shows the layout above (a tracepoint too: its ``trace`` text only with -F).

The event name is right-aligned to the longest name of the session (evlist__max_name_len).

A sample's text is made when its outcome is known (names then see the maps as they were when its
stack was taken) and written when its turn comes in time order.

With a ``namer`` (the trace side's), samples come to named() with their outcome final, in time
order, and ``header(s)`` is the side's own header line.
"""
from ..abi import consts as C
from . import script_fields
from .frames import KeyedStacks, StackCache, frame_lines, name_ips, sample_ips, sample_period, weight
from .sink import ORDERED, Sink


def _frame_lines(_pid, frames):
    return frame_lines(frames)


class PerfScript(Sink):
    takes = ORDERED

    def __init__(self, f, ctx, max_stack=127, namer=None, header=None, fields=None, ns=False):
        self.f, self.ctx, self.max_stack = f, ctx, max_stack
        if namer is None:
            self._frames = StackCache(ctx, _frame_lines)
        else:
            self._frames = KeyedStacks(namer, lambda _pid, frames: frame_lines(frames[:max_stack]))
        self.header = header
        self._ready = {}          # sample number -> text, until its turn (the C engine's path)
        self._name_width = None   # taken at the first sample, as perf does: names come first
        self._out = []            # named() samples' text not yet written (one write for many)
        self._request = fields if fields is not None else script_fields.default_request()
        self._default = fields is None
        self._ns = ns
        self._layouts = None      # per evlist entry: with -F before the run, else at the first sample
        self._stacks = {(True, True, True): self._frames}   # frame options -> their StackCache
        self._trace = None
        if ctx is not None and not self._default:
            perf = ctx.perf
            if perf.pipe:               # a pipe's attrs and formats are records: read ahead
                with perf.ahead() as records:
                    for rec in records:
                        if rec.type == C.PERF_RECORD_SAMPLE:
                            break
                    self._start(perf)
            else:
                self._start(perf)

    def _start(self, perf):
        """Before the run: the layout of each event, a -F its events cannot print refused, and
        the Python path when a tracepoint's trace text is shown (it reads the raw data)."""
        if self._request.prints_trace(perf):
            from .trace_text import TraceText
            self._trace = TraceText(perf, self.ctx)
            self.takes = None
        self._layout(0)

    def resolved(self, s):
        """A sample from the Python path (PerfFeed)."""
        ips = tuple(sample_ips(s))
        p = s.ref.parsed
        s.ref.text = self._text(s.pid, s.tid, self.ctx.comm(s), ips[:self.max_stack], sample_period(s),
                                s.ref.entry, s.cpu, s.time, p.ip, p.raw if self._trace else None)

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

    def _layout(self, index):
        lays = self._layouts
        if lays is None or index >= len(lays):
            perf = self.ctx.perf
            try:
                lays = self._layouts = script_fields.layouts(self._request, perf, self._ns,
                                                             per_entry=self._default)
                if self._trace is not None:
                    self._trace.check(perf.evlist.entries)
            except script_fields.FieldsError as err:
                raise script_fields.FieldsError("%s: %s" % (perf.path, err)) from None
        return lays[index] if index < len(lays) else None

    def _stack(self, lay):
        opts = lay.frames
        cache = self._stacks.get(opts)
        if cache is None:
            cache = self._stacks[opts] = StackCache(self.ctx, lambda _pid, frames: frame_lines(frames, *opts))
        return cache

    def _text(self, pid, tid, comm, ips, period, entry, cpu, time, ip=None, raw=None):
        """One sample's text (builtin-script.c perf_sample__fprintf_start and process_event)."""
        lay = self._layout(entry.index)
        if not lay.fields:        # perf: output[type].fields == 0, the event is not printed
            return ""
        has = lay.fields
        head = ""
        if "comm" in has:
            head = ("%16s " if lay.comm_wide else "%s ") % comm
        if "tid" in has or "pid" in has:
            tid = tid if tid is not None else -1
            if "pid" in has and "tid" in has:
                head += "%7d/%-7d " % (pid if pid is not None else -1, tid)
            else:
                head += "%7d " % (tid if "tid" in has else pid if pid is not None else -1)
        if "cpu" in has:
            head += "[%03d] " % (cpu if cpu is not None else -1)
        if "time" in has and time is not None:
            if lay.ns:
                head += "%5d.%09d: " % (time // 1000000000, time % 1000000000)
            else:
                head += "%5d.%06d: " % (time // 1000000000, time % 1000000000 // 1000)
        if "period" in has:
            head += "%10d " % period
        if "event" in has:
            if self._name_width is None:
                self._name_width = max(len(e.name) for e in self.ctx.perf.evlist.entries)
            head += "%*s: " % (self._name_width, entry.name)
        if "trace" in has and self._trace is not None:
            head += self._trace.text(entry, raw)
        if "ip" not in has:
            return head + "\n"
        if lay.chain:
            return "%s%s\n\n" % (head, self._stack(lay).get(pid, ips))
        if ip is None:            # no PERF_SAMPLE_IP: nothing to show
            return head + "\n"
        return "%s %s\n" % (head, frame_lines(name_ips(pid, (ip,), self.ctx), *lay.frames)[2:])

    def close(self):
        if self._out:
            self.f.write("".join(self._out))
            self._out.clear()
