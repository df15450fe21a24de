"""Stacks counted by address, named later: what a fleet task sends back instead of names.

    one input:  sample -> (comm, frame keys root first) -> count      (AddressStacks)
    after the reduction, once per distinct key:  key -> name          (StackNamer)

A frame key says where the address was, not what it is called, so that the same code on many
hosts is one key and its symbol file is read once, by the client:

    ("u", path, build id, file offset)     in a file mapping; named through its ELF file
    ("k", kallsyms, dso, _text, address)   kernel or module; named through that kallsyms, shifted
                                           to the recorded _text (KASLR) as PerfContext does
    ("v", dso, build id, (release, kernel build id), file offset)
                                           [vdso]: named through the recorded kernel's vDSO
                                           image, found on the client as folded finds it
                                           (symbols/vdso.py)
    ("d", dso)                             no symbols to look for: [anon], [unknown], ...
    ("n", name)                            named in the task (KSYMBOL: BPF programs, trampolines;
                                           run-time generated code: symbols/jitnames.py, whose
                                           map file or jitdump only the task's host has)

Names equal ``folded``'s for the same input and symbol options: the same rules, the same files.
"""
from collections import Counter

from ..symbols.kallsyms import Kallsyms
from ..symbols.maps import KERNEL_DSO, KERNEL_START, Maps
from ..symbols.perf_context import is_running_kernel, kernel_build_id, kernel_release
from ..symbols.resolver import Resolver
from ..symbols.vdso import VdsoSource, is_vdso
from .frames import UNKNOWN, frame_name, sample_ips, weight
from .sink import SAMPLES, Sink


class AddressStacks(Sink):
    """The per-input output: ``stacks`` maps (comm, keys root first) to summed weights."""

    takes = SAMPLES

    def __init__(self, ctx, symbols=True, kallsyms=None, weight="samples"):
        """``ctx``: a PerfContext for maps and comms (its own naming off: nothing is read here);
        ``kallsyms``: the path the client will name kernel frames with, or None."""
        self.ctx, self.symbols, self.kallsyms, self.weight = ctx, symbols, kallsyms, weight
        self.stacks = Counter()
        self._keys = {}
        self._generation = None
        self._text = None
        self._kernel = None          # (release, build id) of the recorded kernel, for [vdso]

    def resolved(self, s):
        """A sample from the Python path (PerfFeed)."""
        self._add(s.pid, self.ctx.comm(s), tuple(sample_ips(s)),
                  weight(self.weight, s.ref.period, s.ref.entry.attr))

    def resolved_ips(self, pid, tid, comm, ips, period, entry):
        """A sample from the C engine: ``ips`` as native u64 bytes."""
        self._add(pid, self.ctx.comm_of(tid, comm), ips,
                  weight(self.weight, period, self.ctx.perf.evlist.entries[entry].attr))

    def _add(self, pid, comm, ips, w):
        maps = self.ctx.maps
        if self._generation != maps.generation or len(self._keys) > 1 << 18:
            self._keys.clear()
            self._generation = maps.generation
            self._text = _kernel_text(maps)
        keys = self._keys.get((pid, ips))
        if keys is None:
            seq = ips if ips.__class__ is tuple else memoryview(ips).cast("Q").tolist()
            keys, user = [], False      # past the kernel half: from the first user address on
            for ip in seq:
                user = user or ip < KERNEL_START
                keys.append(("d", UNKNOWN) if user and ip >= KERNEL_START else self._key(pid, ip))
            keys = self._keys[(pid, ips)] = tuple(reversed(keys))
        self.stacks[(comm.replace(" ", "_"), keys)] += w

    def _key(self, pid, ip):
        res = self.ctx.resolver
        if ip >= KERNEL_START:
            dso = res.frame(pid, ip)[2]
            if not self.symbols:
                return ("d", dso)
            for start, end, name in res.ksymbols:
                if start <= ip < end:
                    return ("n", name)
            return ("k", self.kallsyms, dso, self._text, ip)
        m = res.maps.find(pid, ip)
        if m is None:
            return ("d", UNKNOWN)
        if self.symbols and is_vdso(m.path):
            if self._kernel is None:        # asked at the first [vdso] frame (a pipe's features)
                self._kernel = (kernel_release(self.ctx.perf), kernel_build_id(self.ctx.perf))
            return ("v", m.path, m.build_id or res.build_ids.get(m.path), self._kernel, m.file_offset(ip))
        if not self.symbols or m.path.startswith("["):
            return ("d", m.path)
        jit = res.jit_frame(pid, m, ip)         # the task's own names (ctx naming is off)
        if jit is not None:
            return ("n", jit[0]) if jit[0] is not None else ("d", jit[2])
        return ("u", m.path, m.build_id or res.build_ids.get(m.path), m.file_offset(ip))


def _kernel_text(maps):
    """The recorded _text: the pgoff of the kernel MMAP "[kernel.kallsyms]_text"."""
    entry = maps.by_pid.get(-1)
    for m in (entry[1] if entry else ()):
        if m.path.startswith("[kernel.kallsyms]"):
            return m.pgoff
    return None


class StackNamer:
    """Names frame keys once each, with the symbol options of ``folded``."""

    def __init__(self, symfs=None, buildid_dir=None, inline=True, demangle=True):
        self.resolver = Resolver(Maps(), None, symfs, buildid_dir, demangle=demangle)
        self.resolver.inline = inline
        self.symfs, self.buildid_dir = symfs, buildid_dir
        self.vdso = {}               # (release, kernel build id) -> Resolver of that kernel's [vdso]
        self.kallsyms = {}
        self.names = {}

    def name(self, key):
        hit = self.names.get(key)
        if hit is None:
            hit = self.names[key] = self._name(key)
        return hit

    def _name(self, key):
        kind = key[0]
        if kind == "n":
            return key[1]
        if kind == "d":
            return frame_name(None, key[1])
        if kind == "v":
            _k, dso, build_id, kernel, off = key
            res = self.vdso.get(kernel)
            if res is None:
                res = self.vdso[kernel] = Resolver(Maps(), None, self.symfs, self.buildid_dir,
                                                   demangle=self.resolver.demangle.enabled)
                res.locator.vdso = VdsoSource(kernel[0], is_running_kernel(*kernel))
            return frame_name(res.file_symbol(dso, build_id, off)[0], dso)
        if kind == "u":
            _k, path, build_id, off = key
            res = self.resolver
            sym = res.file_symbol(path, build_id, off)[0]
            # perf's list at that address (Resolver.inlined: None is the frame's own symbol),
            # root first, as folded writes it
            listed = res.inlined(path, build_id, off, True) if sym is not None and res.inline else None
            if not listed:
                return frame_name(sym, path)
            return ";".join(frame_name(sym, path) if n is None else n for n in reversed(listed))
        _k, ks_path, dso, text, ip = key
        ks = self._kallsyms(ks_path)
        hit = None
        if ks is not None:
            ks.delta = 0
            ks.relocate(text)
            hit = ks.find(ip, module=dso.strip("[]") if dso != KERNEL_DSO else None)
        return frame_name(hit[0] if hit else None, dso)

    def _kallsyms(self, path):
        if path is None:
            return None
        if path not in self.kallsyms:
            self.kallsyms[path] = Kallsyms(path)
        return self.kallsyms[path]

    def folded(self, stacks):
        """{folded line: weight} from {(comm, keys): weight}, as ``folded`` writes them."""
        lines = Counter()
        for (comm, keys), w in stacks.items():
            lines[comm + "".join(";" + self.name(k) for k in keys)] += w
        return lines
