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
it (found through .debug_aranges, else the units' own ranges); callers cache per address.
"""
def has_debug_info(path):
    """Whether an ELF file has a .debug_info with contents (our own reader: no pyelftools)."""
    from .elf import ElfFile
    try:
        elf = ElfFile(path)
    except (OSError, ValueError):
        return False
    try:
        sec = elf.by_name.get(".debug_info")
        return sec is not None and sec.type != 8 and sec.size > 0       # 8: SHT_NOBITS
    finally:
        elf.m.close()


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
                    for lo, hi in self._ranges(top, cu, 0):
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
    def chain(self, addr):
        if self.dwarf is None:
            return ()
        offset = self._cu_offset(addr)
        if offset is None:
            return ()
        func = _first(self._tree(offset), addr, False)
        names = []
        while func is not None:
            func = _first(func.children, addr, True)
            if func is not None:
                names.append(_name(func.die))
        names.reverse()
        return tuple(names)


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
