"""Name a frame as perf does: (symbol, offset, dso) for a pid and an address at this point of
the stream.

Files are found like perf finds them (``locate.py``: the binary's .gnu_debuglink, the build-id
cache, /usr/lib/debug by path and by build id, ``--symfs DIR``, the recorded path): symbols
from the first file with a .symtab, addresses through the binary's own segments. A file whose
build id differs from the recorded one is refused (its symbols would be someone else's). Each
(file, offset) is resolved once.

``frames()`` adds the calls inlined at an address (dwarf.py), innermost first, above the frame
that holds them, as perf prints them: the inlined function's name, the holder's offset and
``inlined`` for the dso. Not for kernel frames (kallsyms has no DWARF) nor [vdso] ones (perf
names those from an image without DWARF), nor with ``inline=False`` (``--no-inline``).
"""
from .demangle import Demangler
from .dwarf import InlineInfo, has_debug_info
from .elf import ElfSymbols
from .jitnames import JitNames
from .locate import Locator
from .maps import KERNEL_DSO, KERNEL_START, UNKNOWN
from .vdso import is_vdso

INLINED = "inlined"             # the dso of an inlined frame: perf prints "(inlined)"


class Resolver:
    def __init__(self, maps, kallsyms=None, symfs=None, buildid_dir=None, enabled=True,
                 demangle=True):
        self.maps = maps
        self.kallsyms = kallsyms
        self.locator = Locator(symfs, buildid_dir)
        self.enabled = enabled
        self.build_ids = {}      # recorded path -> build id (BUILD_ID feature, MMAP2)
        self.ksymbols = []       # (start, end, name) from KSYMBOL records
        self._elves = {}         # (path, build id) -> ElfSymbols or None
        self._where = {}         # (path, build id) -> where locate() found its files
        self._cache = {}         # (path, build id, file offset) -> (sym, off)
        self._frames = {}        # (pid, ip) -> (sym, off, dso) while the maps do not change
        self._generation = None
        self.epoch = 0           # bumped by invalidate(): callers cache names per (maps generation, epoch)
        self.refused = {}        # path -> why no symbols (build id mismatch, not found, ...)
        self.demangle = Demangler(demangle)     # names as perf prints them (demangle.py)
        self.jit = JitNames(symfs)   # run-time generated code: /tmp/perf-P.map dsos (jitnames.py)
        self.jit.demangle = self.demangle
        self.inline = enabled    # add inlined frames (frames())
        self.warn = None         # warn(line): said once when pyelftools is missing
        self._dwarf = {}         # (path, build id) -> InlineInfo or None
        self._inlines = {}       # (path, build id, file offset) -> inlined(full=True)
        self._dwarf_warned = set()   # paths whose DWARF was said to be unreadable

    # -- finding binaries ----------------------------------------------------------------------
    def located(self, path, build_id):
        """locate()'s answer for a dso, searched once for its symbols and its DWARF both."""
        key = (path, build_id)
        where = self._where.get(key)
        if where is None:
            where = self._where[key] = self.locator.locate(path, build_id)
        return where

    def elf_for(self, path, build_id):
        key = (path, build_id)
        if key in self._elves:
            return self._elves[key]
        found = None
        where = self.located(path, build_id)
        if where.why:
            self.refused[path] = where.why
        if where.symtab is not None:
            try:
                found = ElfSymbols(where.symtab, where.runtime)
            except Exception as err:        # changed under us, damaged: perf skips it too
                self.refused[path] = "%s: %s" % (where.symtab, err)
        self._elves[key] = found
        return found

    # -- frames --------------------------------------------------------------------------------
    def invalidate(self):
        """Forget per-address answers (kernel symbols or maps changed)."""
        self._frames = {}
        self.epoch += 1

    def frame(self, pid, ip):
        """(sym or None, offset, dso) for an ip of process ``pid``."""
        if self._generation != self.maps.generation or len(self._frames) > 1 << 20:
            self._frames = {}
            self._generation = self.maps.generation
        key = (-1 if ip >= KERNEL_START else pid, ip)
        hit = self._frames.get(key)
        if hit is None:
            hit = self._frames[key] = self._frame(pid, ip)
        return hit

    def _frame(self, pid, ip):
        if ip >= KERNEL_START:
            return self._kernel(ip)
        m = self.maps.find(pid, ip)
        if m is None:
            return None, 0, UNKNOWN
        if not self.enabled or m.path.startswith("[") and not is_vdso(m.path):
            return None, 0, m.path
        hit = self.jit_frame(pid, m, ip)
        if hit is not None:
            return hit
        sym, off = self.file_symbol(m.path, m.build_id or self.build_ids.get(m.path), m.file_offset(ip))
        return sym, off, m.path

    def jit_frame(self, pid, m, ip):
        """(sym, offset, dso) of run-time generated code at ip of mapping m (a /tmp/perf-P.map
        dso, or a dump's code inside a file's mapping: jitnames.py), else None."""
        hit = self.jit.find(m.path, ip)
        if hit is None and self.jit.dumps:
            hit = self.jit.overlay(pid, ip)
        return hit

    def user_frames(self, pid, ip):
        """frames() of an address in the user half of a chain. One in the kernel's range (a
        frame-pointer walk that read garbage) is looked up among the user maps, as perf does
        after PERF_CONTEXT_USER (machine.c add_callchain_ip): not found, ``[unknown]``."""
        if ip >= KERNEL_START:
            return ((ip, None, 0, UNKNOWN),)
        return self.frames(pid, ip)

    def file_symbol(self, path, build_id, off):
        """(sym or None, offset) at a file offset of a binary, each looked up once."""
        key = (path, build_id, off)
        hit = self._cache.get(key)
        if hit is None:
            elf = self.elf_for(path, build_id)
            hit = (elf.find(off) if elf is not None else None) or (None, 0)
            hit = self._cache[key] = (self.demangle(hit[0]), hit[1])
        return hit

    def frames(self, pid, ip):
        """((ip, sym, offset, dso), ...): frame(), with the calls inlined there as perf 7.2
        lists them (inlined(full=True)): innermost first, each "(inlined)" unless perf names
        it by the frame's own symbol; the holder itself where perf prints it."""
        sym, off, dso = self.frame(pid, ip)
        if sym is None or not self.inline or ip >= KERNEL_START or dso.startswith("["):
            return ((ip, sym, off, dso),)
        m = self.maps.find(pid, ip)
        if m is None or m.path != dso:      # named from a JIT map or dump: no DWARF behind it
            return ((ip, sym, off, dso),)
        listed = self.inlined(m.path, m.build_id or self.build_ids.get(m.path), m.file_offset(ip), True)
        if listed is None:
            return ((ip, sym, off, dso),)
        return tuple((ip, sym, off, dso) if name is None else (ip, name, off, INLINED) for name in listed)

    def inlined(self, path, build_id, off, full=False):
        """The names of the calls inlined at a file offset of a binary, innermost first, as perf
        names them (demangled by self.demangle).

        ``full``: perf's whole list (None: just the frame), None standing for the frame's own
        symbol. perf's new_inline_sym() turns each name it gets (dwarf.py perf_chain) into
        the frame's real symbol when the demangled name equals the symbol's name, else into an
        "(inlined)" frame; through libdw the holder's symbol follows them, through addr2line
        the holder is the last name (a GCC clone, foo.constprop.0, is then "foo (inlined)"
        with no real frame under it)."""
        key = (path, build_id, off)
        hit = self._inlines.get(key, False)
        if hit is False:
            hit = None
            info = self._dwarf_for(path, build_id)
            elf = self.elf_for(path, build_id)
            va = elf.vaddr(off) if info is not None and elf is not None else None
            try:
                if va is not None:
                    raw = elf.table.find(va)
                    sym = self.demangle(raw[0]) if raw else None
                    names, holder = info.perf_chain(va, (raw[0], va - raw[1]) if raw else None)
                    # the one comparison perf makes: demangled name == the symbol's demangled name
                    listed = tuple(None if sym is not None and self.demangle(n) == sym
                                   else self.demangle(n) for n in names)
                    if names:
                        hit = listed + (None,) if holder else listed
            except Exception as err:        # damaged DWARF costs its inlined frames, no more
                self._dwarf_warning(path, "DWARF: %s" % err)
                hit = None
            if len(self._inlines) > 1 << 20:
                self._inlines.clear()
            self._inlines[key] = hit
        if full:
            return hit
        return tuple(n for n in hit if n is not None) if hit else ()

    def _dwarf_for(self, path, build_id):
        """The InlineInfo of the first file found for the dso that has DWARF (.debug_info,
        compressed or not, or .zdebug_info), or None."""
        key = (path, build_id)
        if key in self._dwarf:
            return self._dwarf[key]
        found = None
        where = self.located(path, build_id)
        for cand in dict.fromkeys((where.symtab, where.runtime)):
            if cand is None or not has_debug_info(cand):
                continue
            try:
                found = InlineInfo(cand)
            except ImportError:
                self.inline = False
                if self.warn is not None:
                    self.warn("pyelftools is not installed: inlined frames are left out "
                              "(pip install pyelftools, or apt-get install python3-pyelftools)")
            except Exception as err:        # damaged: no inlined frames from it
                self._dwarf_warning(path, "%s: DWARF: %s" % (cand, err))
            if found is not None and found.unread:
                self._dwarf_warning(path, "%s: %s" % (cand, "; ".join(found.unread.values())))
            break
        self._dwarf[key] = found
        return found

    def _dwarf_warning(self, path, why):
        """Said once a file: its DWARF (or part of it) could not be read, so its frames come
        without the calls inlined there."""
        if path in self._dwarf_warned:
            return
        self._dwarf_warned.add(path)
        self.refused.setdefault(path, why)
        if self.warn is not None:
            self.warn("%s: inlined frames left out: %s" % (path, why))

    def _kernel(self, ip):
        kmap = self.maps.kernel_map(ip)
        dso = KERNEL_DSO if kmap is None or kmap.path.startswith("[kernel.kallsyms]") else kmap.path
        if not self.enabled:
            return None, 0, dso
        for start, end, name in self.ksymbols:
            if start <= ip < end:
                return name, ip - start, dso
        if self.kallsyms is None:
            return None, 0, dso
        hit = self.kallsyms.find(ip, module=dso.strip("[]") if dso != KERNEL_DSO else None)
        return (hit[0], hit[1], dso) if hit else (None, 0, dso)
