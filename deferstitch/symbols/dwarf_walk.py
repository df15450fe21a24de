"""Which functions hold an address, from a file's DWARF: the definition, read with pyelftools
(``PyReader``), and its C twin ``deferstitch._dwarf.Reader``, which gives the same answers
faster. ``reader_for(sections)`` picks one.

Both take the buffers of debug_sections.DebugSections and answer three questions:

    path(addr)    None, or (unit offset, ((die offset, ((lo, hi), ...)), ...)): the
                  DW_TAG_subprogram holding addr, then each DW_TAG_inlined_subroutine below the
                  last one found that holds it (libdw's cu_walk_functions_at, as perf walks them)
    names(die)    (DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name) as bytes or None,
                  each followed through DW_AT_abstract_origin / DW_AT_specification
                  (libdw's dwarf_attr_integrate)
    language(cu)  the unit's DW_AT_language, 0 when none

The unit holding an address comes from .debug_aranges, else from the units' own ranges (Go
gives DW_AT_ranges from the unit's DW_AT_low_pc). Within a unit, one pass over its DIEs keeps
the function DIEs with code, in preorder, each with the index past its subtree: the first
subprogram holding addr, then the first inlined one within its subtree, and so on, is the
depth-first search through lexical blocks that libdw makes. Other DIEs are looked through.

Bounded: only the units asked for are read, and only the last ones' indexes are kept (the
C twin: a budget of bytes; here a budget of functions); DIEs are read one at a time, not kept.
"""
import bisect
import os
import struct
from collections import OrderedDict

FUNCS = ("DW_TAG_subprogram", "DW_TAG_inlined_subroutine")
ADDR_FORMS = ("DW_FORM_addr", "DW_FORM_addrx", "DW_FORM_addrx1", "DW_FORM_addrx2", "DW_FORM_addrx3",
              "DW_FORM_addrx4", "DW_FORM_GNU_addr_index")
RANGE_FORMS = ("DW_FORM_sec_offset", "DW_FORM_data4", "DW_FORM_data8", "DW_FORM_rnglistx")
UNIT_REFS = ("DW_FORM_ref1", "DW_FORM_ref2", "DW_FORM_ref4", "DW_FORM_ref8", "DW_FORM_ref_udata")
NAME_ATTRS = ("DW_AT_linkage_name", "DW_AT_MIPS_linkage_name", "DW_AT_name")
MAX_DEPTH = 4096            # DIE nesting followed (the C twin's MAX_DEPTH)
MAX_INTEGRATE = 16          # abstract_origin / specification hops
FUNCS_KEPT = 100_000        # functions of the units' indexes kept (LRU)
UNITS_KEPT = 8              # parsed units (headers, top DIEs) kept for names


def reader_for(sections):
    """The C twin where it is built (and DEFERSTITCH_ACCEL is not 0) and reads this file's
    byte order, else PyReader (ImportError without pyelftools)."""
    if os.environ.get("DEFERSTITCH_ACCEL") != "0" and sections.little_endian:
        try:
            from .. import _dwarf
        except ImportError:
            _dwarf = None
        if _dwarf is not None:
            return _dwarf.Reader(sections.sections, sections.addr_size, sections.little_endian,
                                 tuple(sections.mapped))
    return PyReader(sections)


class _Window:
    """A read-only file over a buffer (a view of a memory map): what pyelftools reads, without
    the copy of the whole section that BytesIO would make."""
    __slots__ = ("buf", "pos", "size")

    def __init__(self, buf):
        self.buf, self.pos, self.size = buf, 0, len(buf)

    def seek(self, offset, whence=0):
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else self.size + offset
        return self.pos

    def tell(self):
        return self.pos

    def read(self, n=-1):
        start = min(self.pos, self.size)
        end = self.size if n is None or n < 0 else min(start + n, self.size)
        self.pos = end
        return bytes(self.buf[start:end])


class PyReader:
    """path / names / language of the module docstring, through pyelftools."""

    def __init__(self, sections):
        import inspect     # here: 6 ms of every command's start-up otherwise
        from elftools.dwarf.dwarfinfo import DebugSectionDescriptor, DWARFInfo, DwarfConfig
        given = {}
        for name, buf in sections.sections.items():
            given[name[1:] + "_sec"] = DebugSectionDescriptor(_Window(buf), name, 0, len(buf), 0)
        # every section DWARFInfo takes (the list grows with pyelftools' versions), None if absent
        params = [p for p in inspect.signature(DWARFInfo.__init__).parameters if p.endswith("_sec")]
        self.dwarf = DWARFInfo(config=DwarfConfig(little_endian=sections.little_endian, machine_arch="",
                                                  default_address_size=sections.addr_size),
                               **{p: given.get(p) for p in params})
        self._info = sections.sections[".debug_info"]
        self._endian = "<" if sections.little_endian else ">"
        self._rnglists = None
        self._aranges = None      # (keys, entries) of .debug_aranges, or False: the units' ranges
        self._units = None        # sorted [(lo, hi, unit offset)] when there are no aranges
        self._offsets = None      # every unit's header offset
        self._cus = OrderedDict()       # unit offset -> parsed unit (LRU, UNITS_KEPT)
        self._indexes = OrderedDict()   # unit offset -> [[die, inlined, ranges, end], ...] (LRU)
        self._kept = 0

    # -- units -----------------------------------------------------------------------------------
    def _unit_offsets(self):
        if self._offsets is None:
            out, off, info, e = [], 0, self._info, self._endian
            while off + 4 <= len(info):
                n, head = struct.unpack_from(e + "I", info, off)[0], 4
                if n == 0xffffffff:
                    if off + 12 > len(info):
                        break
                    n, head = struct.unpack_from(e + "Q", info, off + 4)[0], 12
                out.append(off)
                off += head + n
            self._offsets = out
        return self._offsets

    def _cu(self, offset):
        """The unit at a header offset, its top DIE read (bases for indexed values)."""
        cu = self._cus.get(offset)
        if cu is not None:
            self._cus.move_to_end(offset)
            return cu
        cu = self.dwarf._parse_CU_at_offset(offset)
        cu.get_top_DIE()
        self._cus[offset] = cu
        if len(self._cus) > UNITS_KEPT:
            self._cus.popitem(last=False)
        cache = getattr(self.dwarf, "_abbrevtable_cache", None)
        if cache is not None and len(cache) > 4 * UNITS_KEPT:
            cache.clear()               # kept by pyelftools for every unit read: bounded here
        return cu

    def _unit_of(self, addr):
        if self._aranges is None:
            ar = self.dwarf.get_aranges()
            if ar is not None and ar.entries:
                self._aranges = (ar.keys, ar.entries)
            else:
                self._aranges = False
                units = []
                for off in self._unit_offsets():
                    cu = self._cu(off)
                    top = cu.get_top_DIE()
                    base = top.attributes.get("DW_AT_low_pc")
                    for lo, hi in self._ranges(top, cu, base.value if base else 0):
                        units.append((lo, hi, off))
                units.sort()
                self._units = units
        if self._aranges:
            keys, entries = self._aranges
            e = entries[bisect.bisect_right(keys, addr) - 1]     # the last one when none is below
            return e.info_offset if e.begin_addr <= addr < e.begin_addr + e.length else None
        return next((off for lo, hi, off in self._units if lo <= addr < hi), None)

    # -- the index of a unit ---------------------------------------------------------------------
    def _index(self, offset):
        nodes = self._indexes.get(offset)
        if nodes is not None:
            self._indexes.move_to_end(offset)
            return nodes
        from elftools.dwarf.die import DIE
        if not 0 <= offset < len(self._info):
            raise ValueError(".debug_aranges: unit offset 0x%x past .debug_info" % offset)
        cu = self._cu(offset)
        top = cu.get_top_DIE()
        base = top.attributes.get("DW_AT_low_pc")
        base = base.value if base else 0
        stream, end = self.dwarf.debug_info_sec.stream, offset + cu.size
        nodes, open_ = [], []
        off = top.offset + top.size
        if top.has_children:
            open_.append(None)
        while open_ and off < end:
            die = DIE(cu, stream, off)
            off += die.size
            if die.is_null():
                node = open_.pop()
                if node is not None:
                    nodes[node][3] = len(nodes)
                continue
            node = None
            if die.tag in FUNCS:
                ranges = self._ranges(die, cu, base)
                if ranges:
                    node = len(nodes)
                    nodes.append([die.offset, die.tag == "DW_TAG_inlined_subroutine", ranges, node + 1])
            if die.has_children:
                if len(open_) >= MAX_DEPTH:
                    raise ValueError(".debug_info offset 0x%x: DIEs nested too deep" % die.offset)
                open_.append(node)
        for node in open_:              # a unit cut short: close what is open
            if node is not None:
                nodes[node][3] = len(nodes)
        self._indexes[offset] = nodes
        self._kept += len(nodes)
        while self._kept > FUNCS_KEPT and len(self._indexes) > 1:
            self._kept -= len(self._indexes.popitem(last=False)[1])
        return nodes

    def _ranges(self, die, cu, base):
        """[(low, high)] of a DIE: DW_AT_low_pc/high_pc or DW_AT_ranges (DWARF 5's indexes
        come translated by pyelftools)."""
        a = die.attributes
        lo, hi = a.get("DW_AT_low_pc"), a.get("DW_AT_high_pc")
        if lo is not None and hi is not None and lo.form in ADDR_FORMS:
            if hi.form in ADDR_FORMS:
                return [(lo.value, hi.value)]
            return [(lo.value, max(lo.value + hi.value, 0))]
        r = a.get("DW_AT_ranges")
        if r is None or r.form not in RANGE_FORMS:
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

    # -- the questions ---------------------------------------------------------------------------
    def path(self, addr):
        offset = self._unit_of(addr)
        if offset is None:
            return None
        nodes = self._index(offset)
        i = _first(nodes, 0, len(nodes), addr, False)
        if i is None:
            return None
        out = []
        while i is not None:
            die, _, ranges, end = nodes[i]
            out.append((die, tuple(ranges)))
            i = _first(nodes, i + 1, end, addr, True)
        return offset, tuple(out)

    def names(self, die):
        return tuple(self._integrate(die, attr) for attr in NAME_ATTRS)

    def language(self, offset):
        a = self._cu(offset).get_top_DIE().attributes.get("DW_AT_language")
        return a.value if a is not None else 0

    def _die_at(self, offset):
        from elftools.dwarf.die import DIE
        offsets = self._unit_offsets()
        i = bisect.bisect_right(offsets, offset)
        if not i:
            raise ValueError(".debug_info offset 0x%x: reference before the first unit" % offset)
        cu = self._cu(offsets[i - 1])
        if not cu.cu_die_offset <= offset < offsets[i - 1] + cu.size:
            raise ValueError(".debug_info offset 0x%x: reference outside any unit's DIEs" % offset)
        return DIE(cu, self.dwarf.debug_info_sec.stream, offset)

    def _integrate(self, offset, attr):
        for _ in range(MAX_INTEGRATE):
            die = self._die_at(offset)
            a = die.attributes.get(attr)
            if a is not None:
                if not isinstance(a.value, bytes):
                    raise ValueError(".debug_info offset 0x%x: %s of form %s is no string here"
                                     % (offset, attr, a.form))
                return a.value
            ref = die.attributes.get("DW_AT_abstract_origin") or die.attributes.get("DW_AT_specification")
            if ref is None:
                return None
            if ref.form in UNIT_REFS:
                offset = die.cu.cu_offset + ref.raw_value
            elif ref.form == "DW_FORM_ref_addr":
                offset = ref.raw_value
            else:
                raise ValueError(".debug_info offset 0x%x: a reference of form %s, not followed "
                                 "(type unit, dwz)" % (offset, ref.form))
            if offset >= len(self._info):
                raise ValueError(".debug_info offset 0x%x: reference past the section's end" % offset)
        return None


def _first(nodes, start, end, addr, inlined):
    """The index of the first node in [start, end) of that kind whose ranges hold addr."""
    for i in range(start, end):
        node = nodes[i]
        if node[1] == inlined and any(lo <= addr < hi for lo, hi in node[2]):
            return i
    return None
