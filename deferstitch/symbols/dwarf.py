"""Inlined calls at an address, from a file's DWARF (.debug_info, .debug_abbrev, .debug_aranges,
.debug_ranges, or DWARF 5's .debug_rnglists and .debug_addr), read with pyelftools; the chain perf 7.x prints as ``(inlined)``
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

Each compile unit's tree of functions with code is built once, when an address first falls in
it (found through .debug_aranges, else the units' own ranges, which Go gives as DW_AT_ranges
from the unit's DW_AT_low_pc); callers cache per address. pyelftools reads compressed DWARF in
both forms (SHF_COMPRESSED .debug_*, .zdebug_*). What perf 7.2 lists at an address, which is
not always that walk (an ET_DYN file's low addresses go through addr2line), is perf_chain().
"""
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


LIBDW_OFFLINE_BASE = 0x10000     # elfutils libdwfl/offline.c OFFLINE_REDZONE
# binutils dwarf2.c mangle_style() == 0: C89, C, Cobol74/85, Fortran77, Pascal83, PL/I, C99, UPC,
# C11, C17, Fortran18, Mips_Assembler, Upc, HP Basic91/IMacro/Assembler
_UNMANGLED_LANGS = frozenset((0x1, 0x2, 0x5, 0x6, 0x7, 0x9, 0xf, 0xc, 0x12, 0x1d, 0x2c, 0x2d,
                              0x8001, 0x8765, 0x8101, 0x8102, 0x8103))
_FUNCS = ("DW_TAG_subprogram", "DW_TAG_inlined_subroutine")
_ADDR_FORMS = ("DW_FORM_addr", "DW_FORM_addrx", "DW_FORM_addrx1", "DW_FORM_addrx2", "DW_FORM_addrx3",
               "DW_FORM_addrx4", "DW_FORM_GNU_addr_index")


class _Node:
    __slots__ = ("inlined", "ranges", "die", "children")

    def __init__(self, inlined, ranges, die):
        self.inlined, self.ranges, self.die, self.children = inlined, ranges, die, []

    def holds(self, addr):
        return any(lo <= addr < hi for lo, hi in self.ranges)


class InlineInfo:
    """``chain(vaddr)``: the names of the calls inlined at an address of the file (its ELF
    addresses, as objdump shows them), innermost first; () when none or no DWARF."""

    def __init__(self, path):
        from elftools.elf.elffile import ELFFile      # imported when a file is first read
        self._file = open(path, "rb")
        self.elf = ELFFile(self._file)
        self.dwarf = self.elf.get_dwarf_info() if self.elf.has_dwarf_info() else None
        self._rnglists = None
        self._units = None        # sorted [(lo, hi, cu offset)] when there are no aranges
        self._aranges = None
        self._trees = {}          # cu offset -> [top _Node]
        self._langs = {}          # cu offset -> DW_AT_language
        self._settled = {}        # DIE offset -> the name binutils keeps for it (see perf_chain)
        # perf runs addr2line only on a file with a section of that name (addr2line.c
        # filename__has_section): not on one with .zdebug_line alone (zlib-gnu compression)
        self.debug_line = self.elf.get_section_by_name(".debug_line") is not None
        # where perf's libdw gets the address (else its addr2line child does): ET_EXEC files
        # everywhere; an ET_DYN one (PIE, .so) from 64 KiB above its first segment (see perf_chain)
        loads = [seg["p_vaddr"] for seg in self.elf.iter_segments() if seg["p_type"] == "PT_LOAD"]
        self.libdw_from = 0 if self.elf.header["e_type"] == "ET_EXEC" else \
            (min(loads) if loads else 0) + LIBDW_OFFLINE_BASE

    def close(self):
        self._file.close()

    # -- compile units ---------------------------------------------------------------------------
    def _cu_offset(self, addr):
        if self._aranges is None and self._units is None:
            self._aranges = self.dwarf.get_aranges() or False
            if not self._aranges:
                units = []
                for cu in self.dwarf.iter_CUs():
                    top = cu.get_top_DIE()
                    base = top.attributes.get("DW_AT_low_pc")     # Go: low_pc and ranges from it
                    for lo, hi in self._ranges(top, cu, base.value if base else 0):
                        units.append((lo, hi, cu.cu_offset))
                units.sort()
                self._units = units
        if self._aranges:
            return self._aranges.cu_offset_at_addr(addr)
        return next((off for lo, hi, off in self._units if lo <= addr < hi), None)

    def _tree(self, offset):
        tree = self._trees.get(offset)
        if tree is None:
            cu = self.dwarf.get_CU_at(offset)
            top = cu.get_top_DIE()
            base = top.attributes.get("DW_AT_low_pc")
            tree = self._trees[offset] = self._nodes(top, cu, base.value if base else 0)
        return tree

    def _nodes(self, die, cu, base):
        """The function DIEs with code below ``die``, as a tree (other DIEs are looked through)."""
        out = []
        for child in die.iter_children():
            if child.tag in _FUNCS:
                ranges = self._ranges(child, cu, base)
                if ranges:
                    node = _Node(child.tag == "DW_TAG_inlined_subroutine", ranges, child)
                    node.children = self._nodes(child, cu, base)
                    out.append(node)
                    continue
            if child.has_children:
                out.extend(self._nodes(child, cu, base))
        return out

    def _ranges(self, die, cu, base):
        """[(low, high)] of a DIE: DW_AT_low_pc/high_pc or DW_AT_ranges. DWARF 5's indexes
        (DW_FORM_addrx into .debug_addr, DW_FORM_rnglistx into the unit's offsets table, as
        clang writes them) come translated by pyelftools (0.29 too)."""
        a = die.attributes
        lo, hi = a.get("DW_AT_low_pc"), a.get("DW_AT_high_pc")
        if lo is not None and hi is not None and lo.form in _ADDR_FORMS:
            return [(lo.value, hi.value if hi.form in _ADDR_FORMS else lo.value + hi.value)]
        r = a.get("DW_AT_ranges")
        if r is None or r.form not in ("DW_FORM_sec_offset", "DW_FORM_data4", "DW_FORM_data8",
                                       "DW_FORM_rnglistx"):
            return []
        if self._rnglists is None:
            self._rnglists = self.dwarf.range_lists() or False
        if not self._rnglists:
            return []
        out = []
        for e in self._rnglists.get_range_list_at_offset(r.value, cu=cu):
            if hasattr(e, "base_address"):
                base = e.base_address
            elif e.is_absolute:
                out.append((e.begin_offset, e.end_offset))
            else:
                out.append((base + e.begin_offset, base + e.end_offset))
        return out

    # -- the chain -------------------------------------------------------------------------------
    def _path(self, addr):
        """[subprogram, inlined, ..., innermost inlined] holding addr (cu_walk_functions_at), and
        the unit's offset; ([], None) when no unit or function holds it."""
        if self.dwarf is None:
            return [], None
        offset = self._cu_offset(addr)
        if offset is None:
            return [], None
        func = _first(self._tree(offset), addr, False)
        path = []
        while func is not None:
            path.append(func)
            func = _first(func.children, addr, True)
        return path, offset

    def chain(self, addr):
        """The names (raw: DW_AT_linkage_name, else DW_AT_name) of the calls inlined at addr,
        innermost first, the holding function left out."""
        path, _ = self._path(addr)
        return tuple(_name(n.die) for n in reversed(path[1:]))

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
            return tuple(_name(n.die) for n in reversed(path[1:])), True
        if not self.debug_line:
            return (), True     # perf starts addr2line only for a file with a .debug_line
        names = []
        for n in path:
            names.append(self._settled.get(n.die.offset) or _name(n.die))
        inner = path[-1]
        key = inner.die.offset
        if key not in self._settled and symbol is not None and not self._linkage(inner, offset):
            names[-1] = symbol[0]
            self._settled[key] = symbol[0] if symbol[1] == _first_arange_low(inner.ranges) else None
        elif key not in self._settled:
            self._settled[key] = None
        names.reverse()
        return tuple(names), False

    def _linkage(self, node, offset):
        """binutils' is_linkage: a linkage name, or a DW_AT_name in a language that does not
        mangle (C, Fortran, ...: dwarf2.c mangle_style() 0)."""
        if _integrate(node.die, "DW_AT_linkage_name") or _integrate(node.die, "DW_AT_MIPS_linkage_name"):
            return True
        lang = self._langs.get(offset)
        if lang is None:
            a = self.dwarf.get_CU_at(offset).get_top_DIE().attributes.get("DW_AT_language")
            lang = self._langs[offset] = a.value if a is not None else 0
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


def _first(nodes, addr, inlined):
    """The first node, depth first, of that kind whose ranges hold addr."""
    for n in nodes:
        if n.inlined == inlined and n.holds(addr):
            return n
        hit = _first(n.children, addr, inlined)
        if hit is not None:
            return hit
    return None


def _integrate(die, attr):
    """An attribute of the DIE or of the DIEs it stands for (dwarf_attr_integrate)."""
    for _ in range(16):
        a = die.attributes.get(attr)
        if a is not None:
            return a.value
        ref = die.attributes.get("DW_AT_abstract_origin") or die.attributes.get("DW_AT_specification")
        if ref is None:
            return None
        die = die.get_DIE_from_attribute(ref.name)
    return None


def _name(die):
    name = _integrate(die, "DW_AT_linkage_name") or _integrate(die, "DW_AT_MIPS_linkage_name") \
        or _integrate(die, "DW_AT_name")
    if isinstance(name, bytes):
        name = name.decode("utf-8", "replace")
    return name or "??"
