"""perf script's default text layout, so speedscope, Firefox Profiler and stackcollapse-perf.pl
read it as they read perf's own:

    comm   tid [cpu] secs.usecs: period event:
    \t%16lx sym+0xoff (dso)            one frame a line, innermost first
    (blank line between samples)
"""
from ..abi import consts as C
from .frames import name_frames, sample_period, sym_text


class PerfScript:
    def __init__(self, f, ctx, max_stack=127):
        self.f, self.ctx, self.max_stack = f, ctx, max_stack

    def record(self, rec):
        pass

    def resolved(self, s):
        s.ref.frames = name_frames(s, self.ctx, self.max_stack)
        s.comm = self.ctx.comm(s)

    def sample(self, s):
        ref = s.ref
        st = ref.entry.layout.sample_type
        head = "%s %7d " % (s.comm, s.tid if s.tid is not None else -1)
        if st & C.PERF_SAMPLE_CPU:
            head += "[%03d] " % s.cpu
        if s.time is not None:
            head += "%5d.%06d: " % (s.time // 1000000000, s.time % 1000000000 // 1000)
        head += "%10d " % sample_period(s)
        lines = [head + "%s: " % ref.entry.name]
        for ip, sym, off, dso in ref.frames:
            lines.append("\t%16x %s (%s)" % (ip, sym_text(sym, off), dso))
        self.f.write("\n".join(lines) + "\n\n")

    def close(self):
        pass
