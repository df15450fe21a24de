"""What of the outputs is trace.dat's own: the Namer that names an ftrace sample's frames for
the outputs of output/ (folded, perf script's layout and flame graphs take it as their
``namer`` and the samples through named()), an ftrace event's script header, and what the
trace-cmd report plugin prints.

Frames of an ftrace sample, innermost first:
    kernel  int address          named by the trace.dat's own kallsyms (tep_find_function)
    user    (path, file offset)  from user_unwind_stack + inode_cache; named through the one
                                 resolver of both sides (symbols/resolver.py: debug files,
                                 the build-id cache, inlined calls), from the traced file only
            ([anon], address)    anonymous memory (inode 0): a JIT's code, named by the
                                 process's /tmp/perf-PID.map as perf names it
            (None, address)      from the synchronous user_stack: no file known
Folded and flame graphs name a user frame of no known file (these, and addresses no VMA
covered) by its address: output/frames.py, frame_name.
"""
import os
from collections import Counter

from ..abi.consts import PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER
from ..model import UNMATCHED
from ..output.frames import UNKNOWN, frame_lines, lost_frame_name, sym_text
from ..symbols.elf import ElfError, ElfFile
from ..symbols.maps import KERNEL_DSO, Maps
from ..symbols.resolver import INLINED, Resolver
from .reader import ANON

# the context markers a perf callchain puts before its kernel and its user part (Namer.chain)
_KERNEL, _USER = (PERF_CONTEXT_KERNEL, None, 0, None), (PERF_CONTEXT_USER, None, 0, None)


class Namer:
    """Names frames: kernel through the trace's kallsyms, user files through the resolver the
    perf side names with (its ELF symbols, debug files and inlined calls), but only for the file
    that was traced: a file under ``--symfs`` (the user vouches for it), or the file at that path
    here if its (inode, dev) are the ones inode_cache recorded. Any other file at that path may
    be another build: its frames stay ``path+0xoffset`` and ``unnamed`` counts them by reason.
    The resolver searches debug files by the traced file's own build id, so none of another
    build is taken either."""

    def __init__(self, trace=None, symfs=None, symbols=True, demangle=True, inline=True,
                 buildid_dir=None, warn=None):
        self.trace, self.symfs, self.symbols = trace, symfs, symbols
        # one resolver for both sides: its maps stay empty, the frames come as (path, offset)
        self.resolver = Resolver(Maps(), None, symfs, buildid_dir, enabled=symbols,
                                 demangle=demangle)
        self.resolver.inline = symbols and inline
        self.resolver.warn = warn   # warn(line): DWARF that cannot be read, said once a file
        self.recorded = {}          # (inode, dev) -> path: the feed's inode_cache (FtraceFeed.paths)
        self.unnamed = Counter()    # reason -> user frames left without a name
        self._traced = {}           # path -> (why not, or None; the traced file's build id)
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
        why, build_id = self._traced_id(path)
        if why is None and self.resolver.elf_for(path, build_id) is None:
            # a file found but unreadable (damaged), else an ELF file without symbols
            why = ("not an ELF file" if self.resolver.located(path, build_id).symtab is not None
                   else "no symbol covers the offset")
        if why is not None:
            self.unnamed[why] += n
            return None, 0, path
        sym, symoff = self.resolver.file_symbol(path, build_id, off)
        if sym is None:
            self.unnamed["no symbol covers the offset"] += n
            return None, 0, path
        return sym, symoff or None, path

    def user_frames(self, path, off, pid=None):
        """[(off, sym, symoff, dso)] of one user frame, innermost first: the calls inlined at
        that offset (dso ``inlined``) above the frame that holds them, as the perf side lists
        them (Resolver.frames); an [anon] frame of process ``pid`` named by its perf map."""
        if path == ANON and pid is not None and self.symbols:
            hit = self.resolver.jit.find("/tmp/perf-%d.map" % pid, off)
            if hit is not None and hit[0] is not None:
                return [(off, hit[0], hit[1] or None, hit[2])]
        sym, symoff, dso = self.user(path, off)
        if sym is None or not self.resolver.inline:
            return [(off, sym, symoff, dso)]
        listed = self.resolver.inlined(path, self._traced[path][1], off, True)
        if not listed:
            return [(off, sym, symoff, dso)]
        return [(off, sym, symoff, dso) if name is None else (off, name, symoff, INLINED)
                for name in listed]

    def _traced_id(self, path):
        """(why not, None) when the file at path is not the traced one, else (None, its
        build id or None), found once a path."""
        hit = self._traced.get(path)
        if hit is None:
            full, why = self._traced_file(path)
            build_id = None
            if why is None:
                try:
                    elf = ElfFile(full)
                    try:
                        build_id = elf.build_id()
                    finally:
                        elf.m.close()
                except (OSError, ElfError, ValueError):
                    why = "not an ELF file"
            hit = self._traced[path] = (why, build_id)
        return hit

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
        file's names are fixed from the first time it is named; an [anon] frame's name is its
        process's), so outputs may keep it."""
        key = s.kernel, s.user, s.reason if s.outcome == UNMATCHED else None
        if s.user and any(path == ANON for path, _off in s.user):
            return key + (s.pid,)
        return key

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
            out += self.user_frames(path, off, s.pid)
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

