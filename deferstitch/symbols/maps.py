"""Per-process address maps over time, from MMAP/MMAP2, FORK, COMM(exec) and EXIT.

Threads share their process's maps (keyed by pid). A FORK of a new process copies the parent's
maps; an exec starts empty. Lookups answer "which file and file offset was mapped at this
address at this point of the stream" — callers feed the records in time order.
"""
import bisect
from array import array

KERNEL_START = 0xffff800000000000     # x86-64 canonical kernel half
KERNEL_DSO = "[kernel.kallsyms]"
UNKNOWN = "[unknown]"                 # the dso of an address no map covers


class Map:
    __slots__ = ("start", "end", "pgoff", "path", "build_id", "ident")

    def __init__(self, start, length, pgoff, path, build_id=None):
        self.start, self.end, self.pgoff, self.path, self.build_id = start, start + length, pgoff, path, build_id
        self.ident = None     # a number per content, given by Maps.signature

    def file_offset(self, addr):
        return addr - self.start + self.pgoff


class Maps:
    SIGNATURES = 1 << 12      # distinct map sets (and 16x as many map contents) kept before
                              # they are forgotten (sig_epoch): bounds their memory
    SIGNED_MAPS = 512         # a process with more maps than this gets a signature of its own

    def __init__(self):
        self.by_pid = {}      # pid -> (starts list, maps list), sorted by start
        self.generation = 0   # bumped on every change: lets callers cache lookups
        self.changed = {}     # pid -> the generation of its last change (the kernel's: pid -1)
        self.sig_epoch = 0    # bumped when the signatures are forgotten
        self._sigs = {}       # pid -> (its generation then, signature)
        self._sets = {}       # map set (its maps' idents, as bytes) -> signature
        self._idents = {}     # map content -> ident
        self._next_ident = 0  # (never reused: a Map keeps its ident when the tables are forgotten)

    def _changed(self, pid):
        self.generation += 1
        self.changed[pid] = self.generation

    def signature(self, pid):
        """A number that two processes share while their maps are the same (same files at the
        same places): names of a user address depend on nothing else, so stacks named for one
        hold for the other (workers forked from one parent, or a program run again and again
        without ASLR). Valid while ``changed[pid]`` and ``sig_epoch`` stay as they are."""
        gen = self.changed.get(pid, 0)
        hit = self._sigs.get(pid)
        if hit is not None and hit[0] == gen:
            return hit[1]
        entry = self.by_pid.get(pid)
        maps = entry[1] if entry is not None else ()
        if len(self._sets) >= self.SIGNATURES or len(self._sigs) >= 4 * self.SIGNATURES \
                or len(self._idents) >= 16 * self.SIGNATURES:
            self._sets.clear()
            self._sigs.clear()
            self._idents.clear()
            self.sig_epoch += 1
        if len(maps) > self.SIGNED_MAPS:        # (a JIT's thousands: not worth a key per change)
            key = ("pid", pid, gen)
        else:
            idents = self._idents
            for m in maps:
                if m.ident is None:
                    content = (m.start, m.end, m.pgoff, m.path, m.build_id)
                    m.ident = idents.get(content)
                    if m.ident is None:
                        m.ident = idents[content] = self._next_ident
                        self._next_ident += 1
            key = array("Q", [m.ident for m in maps]).tobytes()
        sig = self._sets.get(key)
        if sig is None:
            sig = self._sets[key] = len(self._sets)
        self._sigs[pid] = (gen, sig)
        return sig

    def add(self, pid, start, length, pgoff, path, build_id=None):
        self._changed(pid)
        starts, maps = self.by_pid.setdefault(pid, ([], []))
        new = Map(start, length, pgoff, path, build_id)
        # A new mapping replaces whatever it overlaps (mmap over an old range).
        i = bisect.bisect_left(starts, start)
        j = i
        while j < len(maps) and maps[j].start < new.end:
            j += 1
        k = i
        if k > 0 and maps[k - 1].end > start:
            k -= 1
        del starts[k:j], maps[k:j]
        starts.insert(k, start)
        maps.insert(k, new)

    def fork(self, ppid, pid):
        self._changed(pid)
        if pid != ppid and ppid in self.by_pid:
            s, m = self.by_pid[ppid]
            self.by_pid[pid] = (list(s), list(m))

    def exec_(self, pid):
        self._changed(pid)
        self.by_pid.pop(pid, None)

    def exit(self, pid):
        self._changed(pid)
        self.by_pid.pop(pid, None)

    def find(self, pid, addr):
        entry = self.by_pid.get(pid)
        if entry is None:
            return None
        starts, maps = entry
        i = bisect.bisect_right(starts, addr) - 1
        if i >= 0 and addr < maps[i].end:
            return maps[i]
        return None

    def kernel_map(self, addr):
        """The kernel or module map (pid -1) holding a kernel address."""
        return self.find(-1, addr)

    def dso(self, pid, addr):
        """The dso name perf would print for an address: kernel, the mapped file, or [unknown]."""
        if addr >= KERNEL_START:
            return KERNEL_DSO
        m = self.find(pid, addr)
        return m.path if m is not None else UNKNOWN
