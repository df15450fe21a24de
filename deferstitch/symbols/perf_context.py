"""PerfContext: perf.data's side-band records (maps, comms, KSYMBOL, jitdump markers), seen in time
order, turned into what names a frame: the maps, comms and symbol sources the outputs need."""
import contextlib
import os

from ..abi import consts as C
from ..abi import records as R
from ..errors import DeferstitchError
from .kallsyms import KALLSYMS_DSO, Kallsyms, find_kallsyms, running_build_id
from .jitdump import marker_pid
from .maps import Maps
from .perfmap import PROT_EXEC, map_dso, map_pid
from .resolver import Resolver
from .vdso import VdsoSource


def kernel_build_id(perf):
    """The recorded kernel's build id (the BUILD_ID feature's [kernel.kallsyms] entry), or None."""
    for ent in perf.feature(C.HEADER_BUILD_ID) or ():
        if ent["filename"] == KALLSYMS_DSO:
            return ent["build_id"]
    return None


def kernel_release(perf):
    """The recorded ``uname -r`` (the OSRELEASE feature), or None."""
    try:
        return perf.feature(C.FEATURE_IDS["OSRELEASE"]) or None
    except OSError:
        return None


def default_kallsyms(perf, buildid_dir, build_id=None):
    """(kallsyms path or None, warning or None) for the recorded kernel (kallsyms_for()), by
    ``build_id`` (the kernel map's) or the BUILD_ID feature's."""
    return kallsyms_for(build_id or kernel_build_id(perf), kernel_release(perf), buildid_dir)


def vdso_source(perf):
    """The recorded kernel, for [vdso] frames (symbols/vdso.py): its release, and whether it is
    the running one (by build id as for kallsyms; by release when no build id was recorded)."""
    def facts():             # asked at the first [vdso] frame: a pipe's features come first
        release = kernel_release(perf)
        return release, is_running_kernel(release, kernel_build_id(perf))
    return VdsoSource(facts=facts)


def is_running_kernel(release, build_id):
    """Whether the recorded kernel is the one running here: the same build id, or the same
    release when no build id was recorded (the test made for /proc/kallsyms)."""
    return running_build_id() == build_id if build_id else release == os.uname().release


def kallsyms_for(build_id, release, buildid_dir):
    """By the kernel's build id as perf finds it (symbols/kallsyms.py); without one,
    /proc/kallsyms when the recording was made on the kernel release running now. Else the
    warning perf gives when it finds no kernel symbols (perf itself, without a build id, takes
    the running kernel's and prints wrong names)."""
    if build_id:
        return find_kallsyms(build_id, buildid_dir)
    if release == os.uname().release and os.access("/proc/kallsyms", os.R_OK):
        return "/proc/kallsyms", None
    recorded = ("kernel %s" % release) if release else "the recorded kernel"
    return None, ("No kallsyms or vmlinux with build-id was found for %s (the file records no "
                  "build id, and this machine runs %s): give --kallsyms FILE"
                  % (recorded, os.uname().release))


MAP_TYPES = frozenset((C.PERF_RECORD_MMAP, C.PERF_RECORD_MMAP2))


def parse_map(perf, rec):
    """The Mmap of a MMAP or MMAP2 record (raises ValueError when damaged)."""
    ent = perf.evlist.for_trailer(rec.data)
    body_end = len(rec.data) - (ent.layout.trailer.size if ent else 0)
    if rec.type == C.PERF_RECORD_MMAP2:
        return R.parse_mmap2(rec.data, perf.endian, body_end, rec.misc)
    return R.parse_mmap(rec.data, perf.endian, body_end)


def mapped_dso(m, misc):
    """The dso perf names a mapping by: its file, or ``/tmp/perf-PID.map`` for executable
    anonymous memory (symbols/perfmap.py). A MMAP (no prot) is executable unless marked data."""
    prot = m.prot if m.prot is not None else (0 if misc & C.PERF_RECORD_MISC_MMAP_DATA else PROT_EXEC)
    return map_dso(m.filename, m.pid, prot, m.flags)


def same_clock(perf):
    """Whether every event was recorded with CLOCK_MONOTONIC (perf record -k 1): the clock of
    jitdump times, which only then compare with the samples' (perf inject --jit requires it)."""
    return all(ent.attr.use_clockid and ent.attr.clockid == 1 for ent in perf.evlist.entries)


EXITED = object()   # comms[tid] of a thread that has exited


class PerfContext:
    """Tracks maps, comms and symbol sources from the records an output sees, for naming frames."""

    def __init__(self, perf, symbols=True, kallsyms=None, symfs=None, buildid_dir=None, warn=None,
                 inline=True, demangle=True):
        self.perf = perf
        self.maps = Maps()
        self.comms = {}
        self.resolver = Resolver(self.maps, None, symfs, buildid_dir, enabled=symbols,
                                 demangle=demangle)
        self.resolver.inline = symbols and inline
        self.resolver.warn = warn
        self.resolver.locator.vdso = vdso_source(perf)
        self.warn = warn             # warn(line): what perf prints on stderr, once (None: silent)
        self._kernel_warning = None
        ks = kallsyms
        # perf (dso__load_kernel_sym) tries no local kallsyms once --symfs names another
        # machine's files: only --kallsyms then
        if symbols and not ks and not symfs:
            ks, self._kernel_warning = default_kallsyms(perf, self.resolver.locator.buildid_dir)
        # without a BUILD_ID feature, the kernel's MMAP2 may carry its build id (perf record
        # --buildid-mmap, perf 7.x's default): the search is made again by it when it comes
        self._by_map_build_id = symbols and not ks and not symfs and kernel_build_id(perf) is None
        self._load_kallsyms(ks if symbols else None)
        for ent in perf.feature(C.HEADER_BUILD_ID) or ():
            self.resolver.build_ids.setdefault(ent["filename"], ent["build_id"])
        self.jit = self.resolver.jit
        self.jit.timed = same_clock(perf)

    def _load_kallsyms(self, ks):
        self.kallsyms_path = ks
        try:
            self.resolver.kallsyms = Kallsyms(ks) if ks else None
        except Exception as err:        # --kallsyms FILE not there, unreadable, a damaged .xz
            raise DeferstitchError("%s: cannot read kernel symbols: %s"
                                   % (ks, getattr(err, "strerror", None) or err)) from None

    def observe(self, rec):
        t, e = rec.type, self.perf.endian
        if self.jit.pending:            # a jitdump reuses addresses: names change with time
            now = self.perf.evlist.time_of(rec)
            if now is not None and self.jit.advance(now):
                self.resolver.invalidate()
        if t not in (C.PERF_RECORD_MMAP, C.PERF_RECORD_MMAP2, C.PERF_RECORD_COMM,
                     C.PERF_RECORD_FORK, C.PERF_RECORD_EXIT, C.PERF_RECORD_KSYMBOL):
            return
        ent = self.perf.evlist.for_trailer(rec.data)
        body_end = len(rec.data) - (ent.layout.trailer.size if ent else 0)
        try:
            if t in MAP_TYPES:
                m = parse_map(self.perf, rec)
                name = m.filename
                if name.startswith("[kernel.kallsyms]"):
                    if self._by_map_build_id and m.build_id:
                        self._by_map_build_id = False
                        ks, self._kernel_warning = default_kallsyms(
                            self.perf, self.resolver.locator.buildid_dir, m.build_id)
                        self._load_kallsyms(ks)
                    if self._kernel_warning and self.warn is not None:
                        # perf says it when it first loads the kernel's symbols: a recording
                        # that maps the kernel (one without a kernel map gets no word)
                        self.warn(self._kernel_warning)
                        self._kernel_warning = None
                    if self.resolver.kallsyms is not None:
                        self.resolver.kallsyms.relocate(m.pgoff)   # pgoff = the recorded _text
                        self.resolver.invalidate()
                name = mapped_dso(m, rec.misc)
                if marker_pid(name) == m.pid:       # (read with names off too: fleet's tasks)
                    self._jitdump(m, rec)
                self.maps.add(m.pid, m.addr, m.len, m.pgoff, name, m.build_id)
            elif t == C.PERF_RECORD_COMM:
                c = R.parse_comm(rec.data, e, body_end, rec.misc)
                self.comms[c.tid] = c.comm
                if c.exec_ and c.pid == c.tid:
                    self.maps.exec_(c.pid)
            elif t == C.PERF_RECORD_FORK:
                task = R.parse_task(rec.data, e)
                self.maps.fork(task.ppid, task.pid)
                if self.comms.get(task.tid) is EXITED:    # the tid used again: a new thread
                    del self.comms[task.tid]
                if self.comms.get(task.ptid, EXITED) is not EXITED:
                    self.comms.setdefault(task.tid, self.comms[task.ptid])
            elif t == C.PERF_RECORD_EXIT:
                # perf forgets the thread (machine__process_exit_event): a sample it prints
                # after this, such as one whose user stack never came (session__flush_deferred_
                # samples, at the end), is a new thread's, named ":TID"
                self.comms[R.parse_task(rec.data, e).tid] = EXITED
            elif t == C.PERF_RECORD_KSYMBOL:
                k = R.parse_ksymbol(rec.data, e, body_end)
                self.resolver.ksymbols.append((k.addr, k.addr + k.len, k.name))
                self.resolver.invalidate()
        except ValueError:
            pass        # a damaged side-band record only costs names, never samples

    def _jitdump(self, m, rec):
        """A runtime's marker mapping of its jitdump: read the dump, say what was wrong with it."""
        jit = self.jit
        seen = len(jit.warnings)
        jit.now = self.perf.evlist.time_of(rec)
        jit.add_dump(m.pid, m.filename, lambda addr: self._in_file(m.pid, addr))
        if self.warn is not None:
            for line in jit.warnings[seen:]:
                self.warn("deferstitch: " + line)

    def _in_file(self, pid, addr):
        """Whether pid's maps put a file (not anonymous memory, not a [special]) at addr."""
        m = self.maps.find(pid, addr)
        return m is not None and map_pid(m.path) is None and not m.path.startswith("[")

    @contextlib.contextmanager
    def named_as(self, tid, comm):
        """Within: thread ``tid`` named ``comm`` even if it has exited since (an output handing
        on late what belongs to an earlier time: the off-CPU view's waits end after they began)."""
        old = self.comms.get(tid)
        if old is not EXITED or not comm:
            yield
            return
        self.comms[tid] = comm
        try:
            yield
        finally:
            self.comms[tid] = old

    def comm(self, s):
        """As perf names a thread: its COMM, "swapper" for the idle task 0, else ":tid"."""
        return self.comm_of(s.tid, s.comm)

    def comm_of(self, tid, comm):
        """comm() from a tid and the comm the sample was taken under; ":TID" once the thread
        has exited."""
        name = self.comms.get(tid) or comm
        if name and name is not EXITED:
            return name
        return "swapper" if tid == 0 else ":%d" % (tid if tid is not None else -1)
