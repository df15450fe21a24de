"""FlameGraph folded stacks: ``comm;outermost;…;innermost COUNT``, root first, sorted.

Frames without a symbol are named after their dso, as stackcollapse-perf.pl does: ``[libc.so.6]``.
"""
import os
from collections import Counter

from .frames import UNKNOWN, name_frames, sample_period


def frame_name(sym, dso):
    if sym is not None:
        return sym
    return _dso_names.get(dso) or _dso_names.setdefault(
        dso, "[%s]" % os.path.basename(dso.strip("[]")) if dso != UNKNOWN else UNKNOWN)


_dso_names = {}      # dso -> "[basename]": few dsos, many frames


class Folded:
    def __init__(self, f, ctx, weight="samples"):
        self.f, self.ctx, self.weight = f, ctx, weight
        self.stacks = Counter()

    def record(self, rec):
        pass

    def resolved(self, s):
        frames = name_frames(s, self.ctx)
        comm = self.ctx.comm(s).replace(" ", "_")
        key = ";".join([comm] + [frame_name(sym, dso) for _ip, sym, _off, dso in reversed(frames)])
        w = sample_period(s) if self.weight == "period" else 1
        self.stacks[key] += w

    def sample(self, s):
        pass

    def close(self):
        for key in sorted(self.stacks):
            self.f.write("%s %d\n" % (key, self.stacks[key]))
