"""Names of run-time generated code: the frames perf puts in a ``/tmp/perf-P.map`` dso (perfmap.py
says which), named from P's jitdump (jitdump.py), else from P's map file; and code a dump says
it put inside a file's own mapping (V8's embedded builtins and bytecode handlers live in
libnode's text), named from the dump from its load time on, as ``perf inject --jit`` overlays
such code with the MMAP2 of its jitted ELF file at that time (``overlay``).

    MMAP2 //anon (exec) of P ─> dso /tmp/perf-P.map ─┬─> jit-P.dump's code at that address,
                                                     │   valid from its load time on
    MMAP2 .../jit-P.dump ─> add_dump(P) ─────────────┤   (else) /tmp/perf-P.map's entry
    MMAP2 libnode.so of P ─> dso libnode.so ─────────┴─> jit-P.dump's code loaded there by
                                                         now, else the file's own symbol

A dump names its frames with the dump as their dso (``py::f:x.py+0x10 (/tmp/jit-9.dump)``), a map
file with the map file (as perf: ``jit_f3+0x10 (/tmp/perf-140.map)``). Load times count when
the recording's clock is the dump's (``perf record -k 1``, CLOCK_MONOTONIC, as perf inject --jit
requires); otherwise each address takes the code put there last, and a warning says so.
"""
import bisect

from .jitdump import JitDump
from .perfmap import PerfMap, map_file, map_pid

class _DumpCodes:
    """One dump's code by address; ``find(ip, now)`` picks among the pieces that held ``ip``."""

    def __init__(self, dump, timed, recorded, in_file=None):
        self.path, self.timed, self.recorded = dump.path, timed, recorded
        codes = sorted(dump.codes, key=lambda c: c.start)
        self.starts = [c.start for c in codes]
        self.codes = codes
        self.longest = max((c.end - c.start for c in codes), default=0)
        self.order = {id(c): i for i, c in enumerate(dump.codes)}
        # times at which an address may change hands: only there can a name depend on the time.
        # The load times of every piece that overlaps another (each overlap meets the piece
        # reaching furthest so far, so every such piece is seen); a few too many only cost
        # the callers a fresh cache.
        switches = set()
        end, last = -1, None
        for c in codes:
            if c.start < end:
                switches.update((c.time, last.time))
            if c.end > end:
                end, last = c.end, c
        # code put inside a file's mapping takes its addresses over at its load time
        if in_file is not None:
            switches.update(c.time for c in codes if in_file(c.start))
        self.switches = sorted(switches)

    def find(self, ip, now, loaded=False):
        """(name, offset) of the code at ``ip``; ``loaded``: only code loaded by ``now`` (the
        rest of a file's mapping is the file's own code until then)."""
        held = []
        i = bisect.bisect_right(self.starts, ip) - 1
        while i >= 0:
            c = self.codes[i]
            if ip - c.start > self.longest:
                break
            if c.start <= ip < c.end:
                held.append(c)
            i -= 1
        if not held:
            return None
        if len(held) > 1:
            if not self.timed or now is None:
                held.sort(key=lambda c: self.order[id(c)])
            else:
                done = [c for c in held if c.time <= now]
                # none yet: the code ran before a record told us the time, take the first
                held = sorted(done, key=lambda c: c.time) if done or loaded else \
                    sorted(held, key=lambda c: -c.time)
        elif loaded and self.timed and now is not None and held[0].time > now:
            return None
        if not held:
            return None
        c = held[-1]
        return c.name, ip - c.start


class JitNames:
    def __init__(self, symfs=None):
        self.symfs = symfs
        self.timed = True           # the recording's clock is the dumps' (set by the caller)
        self.now = None             # the time of the last record seen
        self.maps = {}              # /tmp/perf-P.map dso -> PerfMap, or None (absent, unreadable)
        self.dumps = {}             # pid -> _DumpCodes
        self.dump_info = {}         # recorded dump path -> (file read, JitDump or None)
        self.warnings = []          # lines for the user: damaged dumps, untimed names
        self._switches = []         # sorted times at which some name changes
        # a dump's names as perf prints them after perf inject --jit (ELF symbols, demangled);
        # a map file's as they are (perf's dso__load_perf_map demangles nothing)
        self.demangle = lambda name: name

    @property
    def pending(self):
        return bool(self._switches)

    def add_dump(self, pid, recorded, in_file=None):
        """A marker mmap of ``recorded`` (jit-PID.dump) by ``pid``: read the dump once.
        ``in_file(addr)``: whether pid's maps put a file at addr (its code there is an overlay)."""
        if recorded in self.dump_info:
            return
        path = map_file(recorded, self.symfs)
        try:
            dump = JitDump(path)
        except OSError as err:
            self.dump_info[recorded] = (path, None)
            self.warnings.append("%s: cannot read the jitdump: %s" % (path, err.strerror or err))
            return
        self.dump_info[recorded] = (path, dump)
        if not self.timed and not self.dumps:          # said once, at the first dump
            self.warnings.append("%s: recorded without perf record -k 1 (CLOCK_MONOTONIC): jitdump "
                                 "names are taken without their load times" % recorded)
        if dump.error:
            self.warnings.append(dump.error + " (names after it not read)")
        if dump.codes and self.timed and dump.arch_timestamps:
            self.warnings.append("%s: the dump's times are the CPU's (JITDUMP_FLAGS_ARCH_TIMESTAMP): "
                                 "each address takes the code put there last" % path)
        codes = _DumpCodes(dump, self.timed and not dump.arch_timestamps, recorded, in_file)
        self.dumps[pid] = codes
        if codes.timed:
            self._switches = sorted(self._switches + codes.switches)

    def advance(self, now):
        """Note the stream's time; True when a name may have changed since (callers forget
        the names they keep)."""
        self.now = now
        changed = False
        while self._switches and self._switches[0] <= now:
            self._switches.pop(0)
            changed = True
        return changed

    def find(self, dso, ip):
        """(sym, offset, dso) for an address in a ``/tmp/perf-P.map`` dso, or None when that is
        not such a dso. sym is None when nothing names the address."""
        pid = map_pid(dso)
        if pid is None:
            return None
        codes = self.dumps.get(pid)
        if codes is not None:
            hit = codes.find(ip, self.now)
            if hit is not None:
                return self.demangle(hit[0]), hit[1], codes.recorded
        pm = self._map(dso)
        hit = pm.find(ip) if pm is not None else None
        if hit is None:
            return None, 0, dso
        return hit[0], hit[1], dso

    def overlay(self, pid, ip):
        """(sym, offset, dump) for code pid's dump put at ``ip`` inside a file's mapping, loaded
        by now; None: the file's own code is there."""
        codes = self.dumps.get(pid)
        if codes is None:
            return None
        hit = codes.find(ip, self.now, loaded=True)
        if hit is None:
            return None
        return self.demangle(hit[0]), hit[1], codes.recorded

    def _map(self, dso):
        if dso not in self.maps:
            try:
                self.maps[dso] = PerfMap(map_file(dso, self.symfs))
            except OSError:
                self.maps[dso] = None
        return self.maps[dso]
