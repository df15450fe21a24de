"""What of the outputs is trace.dat's own: the Namer that names an ftrace sample's frames for
the outputs of output/ (folded, perf script's layout and flame graphs take it as their
``namer`` and the samples through named()), an ftrace event's script header, and what the
trace-cmd report plugin prints.

Frames of an ftrace sample, innermost first:
    kernel  int address          named by the trace.dat's own kallsyms (tep_find_function)
    user    (path, file offset)  from user_unwind_stack + inode_cache; named through the ELF
                                 file when it exists here (or under --symfs)
            (None, address)      from the synchronous user_stack: no file known
Folded and flame graphs name a user frame of no known file (these, and addresses no VMA
covered) by its address: output/frames.py, frame_name.
"""
import os
from collections import Counter

from ..abi.consts import PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER
from ..model import UNMATCHED
from ..output.frames import UNKNOWN, frame_lines, lost_frame_name, sym_text
from ..symbols.demangle import Demangler
from ..symbols.elf import ElfError, ElfSymbols
from ..symbols.maps import KERNEL_DSO

# the context markers a perf callchain puts before its kernel and its user part (Namer.chain)
_KERNEL, _USER = (PERF_CONTEXT_KERNEL, None, 0, None), (PERF_CONTEXT_USER, None, 0, None)


class Namer:
    """Names frames: kernel through the trace's kallsyms, user files through their ELF symbols,
    but only from the file that was traced: a file under ``--symfs`` (the user vouches for it),
    or the file at that path here if its (inode, dev) are the ones inode_cache recorded. Any
    other file at that path may be another build: its frames stay ``path+0xoffset`` and
    ``unnamed`` counts them by reason."""

    def __init__(self, trace=None, symfs=None, symbols=True, demangle=True):
        self.trace, self.symfs, self.symbols = trace, symfs, symbols
        self.demangle = Demangler(demangle)     # user names as perf prints them (demangle.py)
        self.recorded = {}          # (inode, dev) -> path: the feed's inode_cache (FtraceFeed.paths)
        self.unnamed = Counter()    # reason -> user frames left without a name
        self._elf = {}              # path -> ElfSymbols, or why there is none
        self._kernel = {}           # address -> its kallsyms name (the file's, fixed)

    def kernel(self, addr):
        """(sym or None, dso): kallsyms gives names, no offsets."""
        name = self._kernel.get(addr, self)
        if name is self:
            name = self._kernel[addr] = (self.trace.function(addr) if (
                self.trace is not None and self.symbols) else None)
        return name, KERNEL_DSO

    def user(self, path, off, n=1):
        """(sym or None, symoff, dso); a frame left unnamed counts n times (n samples had it).
        At a symbol's start ``symoff`` is None: the name alone, as for a kernel frame."""
        if path is None or path.startswith("["):
            return None, 0, path or UNKNOWN
        if not self.symbols:
            return None, 0, path
        elf = self._elf_for(path)
        if isinstance(elf, str):
            self.unnamed[elf] += n
            return None, 0, path
        hit = elf.find(off)
        if hit is None:
            self.unnamed["no symbol covers the offset"] += n
            return None, 0, path
        return self.demangle(hit[0]), hit[1] or None, path

    def _elf_for(self, path):
        elf = self._elf.get(path)
        if elf is None:
            full, why = self._traced_file(path)
            if why is None:
                try:
                    elf = ElfSymbols(full)
                except (OSError, ElfError, ValueError):
                    why = "not an ELF file"
            self._elf[path] = elf = why if why is not None else elf
        return elf

    def _traced_file(self, path):
        """(the file to read, None) when it is the traced one, else (None, why not)."""
        if self.symfs:
            full = os.path.join(self.symfs, path.lstrip("/"))
            if os.path.isfile(full):
                return full, None
        ids = {(key, dev) for (key, dev), p in self.recorded.items() if p == path and dev is not None}
        if not ids:
            return None, "no inode and dev recorded for the path"
        try:
            st = os.stat(path)
        except OSError:
            return None, "not found here" + (" nor under --symfs" if self.symfs else "")
        if (st.st_ino, st.st_dev) not in {(key, os.makedev(dev >> 20, dev & 0xFFFFF)) for key, dev in ids}:
            return None, "another file at that path (inode or dev differ from the traced one)"
        return path, None

    def stack_key(self, s):
        """What frames(s) depends on: its result is the same for samples of one key (a user
        file's names are fixed from the first time it is named), so outputs may keep it."""
        return s.kernel, s.user, s.reason if s.outcome == UNMATCHED else None

    def frames(self, s):
        """[(number, sym, symoff, dso)] innermost first: the number printed is the kernel address,
        the user file offset, or the raw user address; an unmatched sample's last frame says
        why its user stack is lost."""
        out = self._kernel_frames(s) + self._user_frames(s)
        if s.outcome == UNMATCHED:
            out.append((0, lost_frame_name(s.reason), None, UNKNOWN))
        return out

    def chain(self, s):
        """frames() as a perf callchain: each part after its context marker, no lost frame."""
        return [_KERNEL] + self._kernel_frames(s) + [_USER] + self._user_frames(s)

    def _kernel_frames(self, s):
        out = []
        for addr in s.kernel:
            sym, dso = self.kernel(addr)
            out.append((addr, sym, None, dso))
        return out

    def _user_frames(self, s):
        out = []
        for path, off in (s.user or ()):
            sym, symoff, dso = self.user(path, off)
            out.append((off, sym, symoff, dso))
        return out


def header(s):
    """perf script's sample header; the time rounded to microseconds as trace-cmd report does."""
    ev = s.ref
    us = (s.time + 500) // 1000
    return "%s %7d [%03d] %5d.%06d: %s:%s: " % (
        (s.comm or "<...>"), s.tid, s.cpu, us // 1000000, us % 1000000, ev.system, ev.name)


def user_stack_text(ev, namer, frames):
    """A user_unwind_stack as trace-cmd prints the kernel's user_stack: its cookie, then a frame a
    line (``=> sym+0xoff (path)``, or ``=> path+0xoffset`` where no name is given)."""
    lines = ["cookie=%#x <user stack trace>" % ev.number("cookie", 0)]
    for path, off in frames:
        sym, symoff, dso = namer.user(path, off)
        lines.append("=> %s (%s)" % (sym_text(sym, symoff), dso) if sym is not None
                     else "=> %s+%#x" % (dso, off))
    return "\n".join(lines)


def stack_block(namer, served):
    """What the report plugin prints under a user_unwind_stack: each event it completed."""
    return "\n".join("  stitched %s%s" % (header(s).strip(), frame_lines(namer.frames(s)))
                     for s in served)


def unmatched_summary(rep):
    """The end-of-report summary: counts, and the unmatched events one by one (the first 20)."""
    lines = ["deferstitch: %d events: %d stitched (%d after their stack), %d passed, %d unmatched"
             % (rep.samples, rep.stitched, rep.stitched_after_stack, rep.passed, rep.total_unmatched)]
    for reason, n in sorted(rep.unmatched.items()):
        lines.append("  unmatched %-34s %d" % (reason + ":", n))
    for t, tid, cookie, reason in rep.first_unmatched:
        lines.append("  %5d.%06d pid %d cookie %s: %s" % (
            t // 1000000000, t % 1000000000 // 1000, tid,
            "%#x" % cookie if cookie is not None else "-", reason))
    if rep.lost_records:
        lines.append("  missed events: %d times on a CPU, %d events counted"
                     % (rep.lost_records, rep.lost_events))
    bufs = rep.extra.get("buffers") or {}
    if len(bufs) > 1:                   # trace-cmd record -B: each buffer stitched on its own
        for name, b in bufs.items():
            lines.append("  buffer %s: %d events: %d stitched, %d passed, %d unmatched"
                         % (name, b["samples"], b["stitched"], b["passed"],
                            sum(b["unmatched"].values())))
    return "\n".join(lines)

