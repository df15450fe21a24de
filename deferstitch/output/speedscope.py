"""speedscope's file format (https://www.speedscope.app/file-format-schema.json): one "sampled"
profile per thread, frames shared, stacks root first, ``weights`` as long as ``samples``.

The format lists every sample in time order, so the file grows with the input; what is held
per sample is a stack number and a weight in two arrays (12 bytes), and each distinct stack is
encoded to JSON once. The file is written as json.dump would write it, without json.dump's
per-item Python encoder (7 s for the 346 k samples of c_per_task x10). The fleet's file, one
profile per comm from named, summed stacks, is written by the same write() (from_folded())."""
import json
from array import array

from .. import __version__
from .frames import StackCache, frame_name, sample_ips, weight
from .sink import SAMPLES, Sink

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


class Speedscope(Sink):
    takes = SAMPLES

    def __init__(self, f, ctx, name, weight="samples"):
        self.f, self.ctx, self.name, self.weight = f, ctx, name, weight
        self.unit = "nanoseconds" if weight == "ns" else "none"
        self._viewed = {}        # (stack, view) -> the stack under that frame
        self.frames = []
        self.frame_index = {}
        self.profiles = {}       # tid -> [comm, stack numbers, weights]
        self._texts = []         # stack number -> its frame indexes as JSON, root first
        self._numbers = {}       # that text -> stack number
        self._stacks = StackCache(ctx, self._stack)   # (pid, ips) -> stack number

    def _frame(self, sym, dso):
        key = (frame_name(sym, dso), dso)
        i = self.frame_index.get(key)
        if i is None:
            i = self.frame_index[key] = len(self.frames)
            self.frames.append({"name": key[0], "file": dso})
        return i

    def _stack(self, _pid, frames):
        text = json.dumps([self._frame(sym, dso) for _ip, sym, _off, dso in reversed(frames)])
        n = self._numbers.get(text)
        if n is None:
            n = self._numbers[text] = len(self._texts)
            self._texts.append(text)
        return n

    def resolved(self, s):
        """A sample from the Python path (PerfFeed)."""
        self._add(s.tid, self.ctx.comm(s), self._stacks.get(s.pid, tuple(sample_ips(s))),
                  weight(self.weight, s.ref.period, s.ref.entry.attr))

    def resolved_ips(self, pid, tid, comm, ips, period, entry):
        """A sample from the C engine (perfdata/engine.py): ``ips`` as native u64 bytes."""
        self._add(tid, self.ctx.comm_of(tid, comm), self._stacks.get(pid, ips),
                  weight(self.weight, period, self.ctx.perf.evlist.entries[entry].attr))

    def _add(self, tid, comm, stack, w):
        if self.view is not None:           # the wall-clock view: its frame at the root
            viewed = self._viewed.get((stack, self.view))
            if viewed is None:
                text = self._texts[stack]
                vi = self._frame(self.view, None)
                text = "[%d%s" % (vi, ", " + text[1:] if text != "[]" else "]")
                viewed = self._numbers.get(text)
                if viewed is None:
                    viewed = self._numbers[text] = len(self._texts)
                    self._texts.append(text)
                self._viewed[(stack, self.view)] = viewed
            stack = viewed
        prof = self.profiles.get(tid)
        if prof is None:
            prof = self.profiles[tid] = [comm, array("L"), array("Q")]
        prof[0] = comm
        prof[1].append(stack)
        prof[2].append(w)

    def close(self):
        write(self.f, self.name, self.frames, self._texts, (
            ("%s (tid %s)" % (comm, tid), samples, weights)
            for tid, (comm, samples, weights) in sorted(self.profiles.items(), key=lambda kv: kv[0] or 0)),
            self.unit)


def write(f, name, frames, texts, profiles, unit="none"):
    """The file: ``frames`` the shared frames (dicts), ``texts`` each stack's frame indexes root
    first as JSON, ``profiles`` (name, samples, weights) each, a sample its stack's number in
    ``texts``. Written as json.dump would write it, without json.dump's per-item encoder."""
    head = json.dumps({"$schema": SCHEMA, "name": name, "exporter": "deferstitch %s" % __version__,
                       "activeProfileIndex": 0, "shared": {"frames": frames}})
    write = f.write
    write(head[:-1] + ', "profiles": [')
    for i, (pname, samples, weights) in enumerate(profiles):
        head = json.dumps({"type": "sampled", "name": pname, "unit": unit, "startValue": 0,
                           "endValue": sum(weights)})
        write((", " if i else "") + head[:-1] + ', "samples": [')
        for at in range(0, len(samples), 4096):
            write((", " if at else "") + ", ".join([texts[n] for n in samples[at:at + 4096]]))
        write('], "weights": [')
        for at in range(0, len(weights), 4096):
            write((", " if at else "") + ", ".join(map(str, weights[at:at + 4096])))
        write("]}")
    write("]}\n")


def from_folded(f, lines, name, unit="none"):
    """The fleet's file from named stacks (``{"comm;outer;...;inner": weight}``): one profile
    per comm, a frame per distinct name, the stacks in sorted order."""
    frames, index, profiles, texts = [], {}, {}, []
    for line in sorted(lines):
        comm, *stack = line.split(";")
        ids = []
        for fr in stack:
            i = index.get(fr)
            if i is None:
                i = index[fr] = len(frames)
                frames.append({"name": fr})
            ids.append(i)
        prof = profiles.setdefault(comm, ([], []))
        prof[0].append(len(texts))
        texts.append(json.dumps(ids))
        prof[1].append(lines[line])
    write(f, name, frames, texts, ((comm, s, w) for comm, (s, w) in sorted(profiles.items())), unit)
