"""speedscope's file format (https://www.speedscope.app/file-format-schema.json): one "sampled"
profile per thread, frames shared, stacks root first, ``weights`` as long as ``samples``."""
import json

from .. import __version__
from .folded import frame_name
from .frames import StackCache, sample_ips, weight

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


class Speedscope:
    def __init__(self, f, ctx, name, weight="samples"):
        self.f, self.ctx, self.name, self.weight = f, ctx, name, weight
        self.frames = []
        self.frame_index = {}
        self.profiles = {}       # tid -> [comm, samples, weights]
        self._stacks = StackCache(ctx, self._stack)   # (pid, ips) -> frame indexes, root first

    def record(self, rec):
        pass

    def _frame(self, sym, dso):
        key = (frame_name(sym, dso), dso)
        i = self.frame_index.get(key)
        if i is None:
            i = self.frame_index[key] = len(self.frames)
            self.frames.append({"name": key[0], "file": dso})
        return i

    def _stack(self, _pid, frames):
        return [self._frame(sym, dso) for _ip, sym, _off, dso in reversed(frames)]

    def resolved(self, s):
        """A sample from the Python path (PerfFeed)."""
        self._add(s.tid, self.ctx.comm(s), self._stacks.get(s.pid, tuple(sample_ips(s))),
                  weight(self.weight, s.ref.period, s.ref.entry.attr))

    def resolved_ips(self, pid, tid, comm, ips, period, entry):
        """A sample from the C engine (perfdata/engine.py): ``ips`` as native u64 bytes."""
        self._add(tid, self.ctx.comm_of(tid, comm), self._stacks.get(pid, ips),
                  weight(self.weight, period, self.ctx.perf.evlist.entries[entry].attr))

    def _add(self, tid, comm, stack, w):
        prof = self.profiles.get(tid)
        if prof is None:
            prof = self.profiles[tid] = [comm, [], []]
        prof[0] = comm
        prof[1].append(stack)
        prof[2].append(w)

    def sample(self, s):
        pass

    def close(self):
        profiles = []
        for tid, (comm, samples, weights) in sorted(self.profiles.items(), key=lambda kv: kv[0] or 0):
            profiles.append({"type": "sampled", "name": "%s (tid %s)" % (comm, tid),
                             "unit": "none", "startValue": 0, "endValue": sum(weights),
                             "samples": samples, "weights": weights})
        json.dump({"$schema": SCHEMA, "name": self.name, "exporter": "deferstitch %s" % __version__,
                   "activeProfileIndex": 0, "shared": {"frames": self.frames},
                   "profiles": profiles}, self.f)
        self.f.write("\n")
