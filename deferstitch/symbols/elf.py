"""ELF function symbols (.symtab, else .dynsym) and the build id of one file (pyelftools).

Addresses are looked up by *file offset* (what a sample's ip minus its map's start plus pgoff
gives), turned into a virtual address through the PT_LOAD segment that holds that offset: right
for PIE executables, shared libraries and fixed-address executables alike.
"""
import bisect

from .table import GLOBAL, LOCAL, WEAK, SymbolTable

# STT_GNU_IFUNC (10) is STT_LOOS to pyelftools: both names, one type.
_FUNC_TYPES = ("STT_FUNC", "STT_GNU_IFUNC", "STT_LOOS")
_BIND = {"STB_GLOBAL": GLOBAL, "STB_WEAK": WEAK, "STB_LOCAL": LOCAL, "STB_GNU_UNIQUE": GLOBAL}


PLT_ENTRY = 16        # x86-64: the PLT header and each entry are 16 bytes


def _plt_jump_target(code, entry_addr):
    """The GOT slot an x86-64 PLT entry jumps through: [endbr64] [bnd] jmp *disp32(%rip)."""
    n = 4 if code[:4] == b"\xf3\x0f\x1e\xfa" else 0
    if code[n:n + 1] == b"\xf2":
        n += 1
    if code[n:n + 2] != b"\xff\x25" or len(code) < n + 6:
        return None
    disp = int.from_bytes(code[n + 2:n + 6], "little", signed=True)
    return entry_addr + n + 6 + disp


def plt_symbols(elf, table):
    """perf's dso__synthesize_plt_symbols (symbol-elf.c) for x86-64: ".plt" for the lazy header,
    "name@plt" per .rela.plt entry sorted by GOT offset (x86 does not emit IFUNC relocations in
    PLT order), an IFUNC named after its resolver, entries in .plt.sec for IBT builds, and the
    .plt.got stubs named through .rela.dyn."""
    out = []
    plt = elf.get_section_by_name(".plt")
    if plt is None or elf["e_machine"] != "EM_X86_64":
        return out
    header = (plt["sh_addr"], plt["sh_addr"] + PLT_ENTRY, ".plt")
    rela = elf.get_section_by_name(".rela.plt")
    pltsec = elf.get_section_by_name(".plt.sec")
    out.append(header)
    if rela is not None and hasattr(rela, "iter_relocations"):
        dynsym = elf.get_section(rela["sh_link"])
        relocs = sorted(rela.iter_relocations(), key=lambda r: r["r_offset"])
        if pltsec is not None:
            out[0] = (plt["sh_addr"], plt["sh_addr"] + plt["sh_size"], ".plt")
            addr = pltsec["sh_addr"]
        elif len(relocs) * PLT_ENTRY == plt["sh_size"]:
            out.pop()                       # not lazy: no header
            addr = plt["sh_addr"]
        else:
            addr = plt["sh_addr"] + PLT_ENTRY
        for r in relocs:
            sym = dynsym.get_symbol(r["r_info_sym"]) if r["r_info_sym"] else None
            name = sym.name.split("@")[0] if sym is not None and sym.name else None
            if name is None:
                hit = table.find(r["r_addend"]) if r.is_RELA() else None
                name = hit[0] if hit and hit[1] == 0 else "offset_%#x" % addr
            out.append((addr, addr + PLT_ENTRY, name + "@plt"))
            addr += PLT_ENTRY
    pltgot = elf.get_section_by_name(".plt.got")
    dyn = elf.get_section_by_name(".rela.dyn")
    if pltgot is not None and dyn is not None and hasattr(dyn, "iter_relocations"):
        dynsym = elf.get_section(dyn["sh_link"])
        by_got = {r["r_offset"]: r["r_info_sym"] for r in dyn.iter_relocations()}
        code, step = pltgot.data(), pltgot["sh_entsize"] or 8
        for i in range(0, len(code) - step + 1, step):
            target = _plt_jump_target(code[i:i + step], pltgot["sh_addr"] + i)
            idx = by_got.get(target)
            sym = dynsym.get_symbol(idx) if idx else None
            if sym is not None and sym.name:
                out.append((pltgot["sh_addr"] + i, pltgot["sh_addr"] + i + step,
                            sym.name.split("@")[0] + "@plt"))
    return out


def read_build_id(elf):
    for sec in elf.iter_sections():
        if sec["sh_type"] != "SHT_NOTE":
            continue
        for note in sec.iter_notes():
            if note["n_type"] == "NT_GNU_BUILD_ID":
                return note["n_desc"]
    return None


class ElfSymbols:
    def __init__(self, path):
        from elftools.elf.elffile import ELFFile      # imported here: optional dependency
        with open(path, "rb") as f:
            elf = ELFFile(f)
            self.path = path
            self.build_id = read_build_id(elf)
            self.segments = sorted((seg["p_offset"], seg["p_vaddr"], seg["p_filesz"])
                                   for seg in elf.iter_segments() if seg["p_type"] == "PT_LOAD")
            self._seg_starts = [s[0] for s in self.segments]
            syms = []
            for secname in (".symtab", ".dynsym"):
                sec = elf.get_section_by_name(secname)
                if sec is None:
                    continue
                for s in sec.iter_symbols():
                    if (s["st_info"]["type"] in _FUNC_TYPES and s.name
                            and s["st_shndx"] != "SHN_UNDEF"):
                        syms.append((s["st_value"], s["st_value"] + s["st_size"],
                                     _BIND.get(s["st_info"]["bind"], LOCAL), s.name.split("@")[0]))
                if syms:
                    break              # perf: .symtab when there is one, else .dynsym
            self.table = SymbolTable(syms)
            self.table.add_sized(plt_symbols(elf, self.table))

    def vaddr(self, file_offset):
        i = bisect.bisect_right(self._seg_starts, file_offset) - 1
        if i >= 0:
            off, va, size = self.segments[i]
            if file_offset < off + max(size, 1):
                return file_offset - off + va
        return None

    def find(self, file_offset):
        va = self.vaddr(file_offset)
        return None if va is None else self.table.find(va)
