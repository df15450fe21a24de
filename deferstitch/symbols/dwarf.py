"""Inlined calls at an address, from a file's DWARF: the chain perf 7.x prints as ``(inlined)``
frames above the frame that holds them.

perf (util/libdw.c libdw__addr2line, dwarf-aux.c cu_walk_functions_at) takes the compile unit
holding the address, the DW_TAG_subprogram whose ranges hold it (the frame's own function, the
ELF symbol), then again and again the first DW_TAG_inlined_subroutine below the last one found
(depth first, through lexical blocks) whose ranges hold it. Each inlined one is a frame, named by
its DW_AT_linkage_name, else DW_AT_name, following DW_AT_abstract_origin and
DW_AT_specification (dwarf_attr_integrate)::

    main                      DW_TAG_subprogram  [0x10e0, 0x1370)      main+0xc8  (workload_c)
      DW_TAG_lexical_block
        now                   DW_TAG_inlined_subroutine [0x1198, 0x11b0)
                                                                       now+0xc8   (inlined)
    -> chain at 0x11a8: ("now",), innermost first; perf prints the holder's offset for each.

That walk is dwarf_walk.py's (pyelftools, and its C twin _dwarf.c: lazy, in bounded memory),
over the sections debug_sections.py hands it (compressed ones decompressed: zlib, zstd,
.zdebug_*); callers cache per address. What perf 7.2 lists at an address, which is not always
that walk (an ET_DYN file's low addresses go through addr2line), is perf_chain() here.
"""
from .debug_sections import DebugSections
from .dwarf_walk import reader_for


def has_debug_info(path):
    """Whether an ELF file has DWARF with contents: a .debug_info (SHF_COMPRESSED or not, as Go
    1.19 and ``objcopy --compress-debug-sections=zlib`` write it) or the older ``.zdebug_info``
    ("ZLIB" and a big-endian size before the zlib stream: Go before 1.12, ``zlib-gnu``). Our own
    reader: no pyelftools (which decompresses both)."""
    from .elf import ElfFile
    try:
        elf = ElfFile(path)
    except (OSError, ValueError):
        return False
    try:
        sec = elf.by_name.get(".debug_info") or elf.by_name.get(".zdebug_info")
        return sec is not None and sec.type != 8 and sec.size > 0       # 8: SHT_NOBITS
    finally:
        elf.m.close()


ET_EXEC = 2
LIBDW_OFFLINE_BASE = 0x10000     # elfutils libdwfl/offline.c OFFLINE_REDZONE
# binutils dwarf2.c mangle_style() == 0: C89, C, Cobol74/85, Fortran77, Pascal83, PL/I, C99, UPC,
# C11, C17, Fortran18, Mips_Assembler, Upc, HP Basic91/IMacro/Assembler
_UNMANGLED_LANGS = frozenset((0x1, 0x2, 0x5, 0x6, 0x7, 0x9, 0xf, 0xc, 0x12, 0x1d, 0x2c, 0x2d,
                              0x8001, 0x8765, 0x8101, 0x8102, 0x8103))


class InlineInfo:
    """``chain(vaddr)``: the names of the calls inlined at an address of the file (its ELF
    addresses, as objdump shows them), innermost first; () when none or no DWARF. The DWARF is
    read by dwarf_walk (the C twin where built); ``unread``: the DWARF sections that could not
    be read, and why (the file's frames then come without the calls they would give)."""

    def __init__(self, path):
        sections = DebugSections(path)
        self.unread = sections.unread
        self.reader = reader_for(sections) if ".debug_info" in sections.sections else None
        self._langs = {}          # unit offset -> DW_AT_language
        self._names = {}          # DIE offset -> reader.names()
        self._settled = {}        # DIE offset -> the name binutils keeps for it (see perf_chain)
        elf = sections.elf
        # perf runs addr2line only on a file with a section of that name (addr2line.c
        # filename__has_section): not on one with .zdebug_line alone (zlib-gnu compression)
        self.debug_line = ".debug_line" in elf.by_name
        # where perf's libdw gets the address (else its addr2line child does): ET_EXEC files
        # everywhere; an ET_DYN one (PIE, .so) from 64 KiB above its first segment (see perf_chain)
        loads = [vaddr for _off, vaddr, _size in elf.loads]
        self.libdw_from = 0 if elf.type == ET_EXEC else (min(loads) if loads else 0) + LIBDW_OFFLINE_BASE

    def close(self):
        self.reader = None

    # -- the chain -------------------------------------------------------------------------------
    def _path(self, addr):
        """[(die, ranges) of the subprogram, inlined, ..., innermost inlined] holding addr
        (cu_walk_functions_at), and the unit's offset; ([], None) when none holds it."""
        found = self.reader.path(addr) if self.reader is not None else None
        if found is None:
            return [], None
        return found[1], found[0]

    def _raw(self, die):
        """reader.names() of a DIE, asked once."""
        hit = self._names.get(die)
        if hit is None:
            if len(self._names) > 1 << 16:
                self._names.clear()
            hit = self._names[die] = self.reader.names(die)
        return hit

    def _name(self, die):
        """A DIE's name as perf takes it: linkage name, else DW_AT_name (libdw's
        dwarf_diename after die_get_linkage_name), "??" when none."""
        linkage, mips, name = self._raw(die)
        name = linkage or mips or name
        return name.decode("utf-8", "replace") if name else "??"

    def chain(self, addr):
        """The names (raw: DW_AT_linkage_name, else DW_AT_name) of the calls inlined at addr,
        innermost first, the holding function left out."""
        path, _ = self._path(addr)
        return tuple(self._name(die) for die, _ in reversed(path[1:]))

    def perf_chain(self, addr, symbol=None):
        """What perf 7.2 (Debian's: libdw, no libbfd/libLLVM) lists at addr before its
        new_inline_sym(): ``(names, holder)``, raw names innermost first; ``holder``: perf adds
        the frame's own symbol below them (libdw), else ``names`` end with the holding
        function's name, turned into the real frame only if it equals the symbol (addr2line).
        ``symbol``: (raw ELF name, start address) of the symbol holding addr, or None.

        perf tries libdw first (util/libdw.c: cu_walk_functions_at, the subprogram given as the
        frame's symbol, inlined DIEs named linkage name else name). libdw reports the file
        offline: an ET_DYN one is placed LIBDW_OFFLINE_BASE above its own addresses and perf
        looks the module up with the file's address unbiased, so below that libdw finds no
        module, returns 0 and perf runs ``addr2line -a -i -f`` (util/addr2line.c), whose
        records are all the functions, innermost first, the subprogram last. binutils names the
        innermost one, when it has no linkage name and its unit's language mangles (C++, Go,
        Rust), by the ELF symbol at addr the first time a lookup lands in it; from then on by
        its own name, unless the symbol starts where its first range starts (then by the
        symbol's name for good): dwarf2.c _bfd_dwarf2_find_nearest_line. perf starts addr2line
        only on a file with a section named .debug_line (none: nothing listed). That state
        lives in the addr2line process (one per dso) and in this object alike, so callers must
        ask in perf's order, each address once (perf caches the answer per dso and address)."""
        path, offset = self._path(addr)
        if not path:
            return (), True
        if addr >= self.libdw_from:
            return tuple(self._name(die) for die, _ in reversed(path[1:])), True
        if not self.debug_line:
            return (), True     # perf starts addr2line only for a file with a .debug_line
        names = []
        for die, _ in path:
            names.append(self._settled.get(die) or self._name(die))
        key, ranges = path[-1]
        if key not in self._settled and symbol is not None and not self._linkage(key, offset):
            names[-1] = symbol[0]
            self._settled[key] = symbol[0] if symbol[1] == _first_arange_low(ranges) else None
        elif key not in self._settled:
            self._settled[key] = None
        names.reverse()
        return tuple(names), False

    def _linkage(self, die, offset):
        """binutils' is_linkage: a linkage name, or a DW_AT_name in a language that does not
        mangle (C, Fortran, ...: dwarf2.c mangle_style() 0)."""
        linkage, mips, _ = self._raw(die)
        if linkage or mips:
            return True
        lang = self._langs.get(offset)
        if lang is None:
            lang = self._langs[offset] = self.reader.language(offset)
        return lang in _UNMANGLED_LANGS


def _first_arange_low(ranges):
    """The low end of binutils' first arange of a function (dwarf2.c arange_add): its first
    range, extended by any later range that touches it, ranges merged in its list's order."""
    first = list(ranges[0])
    rest = []                           # the nodes after the first, newest first
    for lo, hi in ranges[1:]:
        for ar in [first] + rest:
            if lo == ar[1]:
                ar[1] = hi
                break
            if hi == ar[0]:
                ar[0] = lo
                break
        else:
            rest.insert(0, [lo, hi])
    return first[0]
