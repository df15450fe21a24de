"""ELF function symbols (.symtab, else .dynsym), PLT entries and the build id of one file.

A small reader of our own (struct over mmap) rather than pyelftools: the perf script plugin runs
in perf's embedded Python, which has only the standard library.

Addresses are looked up by *file offset* (a sample's ip minus its map's start plus pgoff),
turned into a virtual address through the PT_LOAD segment that holds that offset: right for PIE
executables, shared libraries and fixed-address executables alike.

    Elf64_Ehdr { u8 e_ident[16]; u16 e_type, e_machine; u32 e_version; u64 e_entry, e_phoff,
                 e_shoff; u32 e_flags; u16 e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum,
                 e_shstrndx; }
    Elf64_Phdr { u32 p_type, p_flags; u64 p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align; }
    Elf64_Shdr { u32 sh_name, sh_type; u64 sh_flags, sh_addr, sh_offset, sh_size;
                 u32 sh_link, sh_info; u64 sh_addralign, sh_entsize; }
    Elf64_Sym  { u32 st_name; u8 st_info, st_other; u16 st_shndx; u64 st_value, st_size; }
    Elf64_Rela { u64 r_offset, r_info; s64 r_addend; }       (32-bit variants likewise)
"""
import binascii
import bisect
import mmap
import struct
import sys
from collections import namedtuple
from itertools import compress, repeat
from operator import eq

from .table import GLOBAL, LOCAL, WEAK, SymbolTable

PT_LOAD = 1
SHT_SYMTAB, SHT_RELA, SHT_NOTE, SHT_NOBITS, SHT_REL, SHT_DYNSYM = 2, 4, 7, 8, 9, 11
STT_NOTYPE, STT_FUNC, STT_GNU_IFUNC = 0, 2, 10
SHN_UNDEF, SHN_LORESERVE = 0, 0xff00
STV_INTERNAL, STV_HIDDEN = 1, 2
NT_GNU_BUILD_ID = 3
EM_X86_64 = 62
PLT_ENTRY = 16        # x86-64: the PLT header and each entry are 16 bytes
R_X86_64_IRELATIVE = 37
_BIND = {0: LOCAL, 1: GLOBAL, 2: WEAK, 10: GLOBAL}
# st_info byte -> 1 a function (STT_FUNC, STT_GNU_IFUNC), 2 a possible label (STT_NOTYPE), else 0;
# its binding and its type, each as one byte: bytes.translate turns a column at C speed
_KIND = bytes(1 if b & 0xf in (STT_FUNC, STT_GNU_IFUNC) else 2 if b & 0xf == STT_NOTYPE else 0
              for b in range(256))
_BINDS = bytes(_BIND.get(b >> 4, LOCAL) for b in range(256))
_TYPES = bytes(b & 0xf for b in range(256))

Section = namedtuple("Section", "name type flags addr offset size link info entsize")
Reloc = namedtuple("Reloc", "offset sym addend type")


class ElfError(ValueError):
    pass


class ElfFile:
    """The parts of an ELF file symbolization needs, read lazily from a memory map."""

    def __init__(self, path):
        with open(path, "rb") as f:
            try:
                self.m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:
                raise ElfError("empty file") from None
        m = self.m
        if len(m) < 52 or m[:4] != b"\x7fELF" or m[4] not in (1, 2) or m[5] not in (1, 2):
            raise ElfError("not an ELF file")
        self.is64 = m[4] == 2
        e = self.e = "<" if m[5] == 1 else ">"
        if self.is64:
            (self.type, self.machine, _v, _entry, phoff, shoff, _fl, _eh, phentsize, phnum,
             shentsize, shnum, shstrndx) = struct.unpack_from(e + "HHIQQQIHHHHHH", m, 16)
            phfmt, shfmt = e + "IIQQQQQQ", e + "IIQQQQIIQQ"
        else:
            (self.type, self.machine, _v, _entry, phoff, shoff, _fl, _eh, phentsize, phnum,
             shentsize, shnum, shstrndx) = struct.unpack_from(e + "HHIIIIIHHHHHH", m, 16)
            phfmt, shfmt = e + "IIIIIIII", e + "IIIIIIIIII"
        self.loads = []
        for i in range(phnum):
            at = phoff + i * phentsize
            if at + struct.calcsize(phfmt) > len(m):
                raise ElfError("program header %d past the end of the file" % i)
            ph = struct.unpack_from(phfmt, m, at)
            if self.is64:
                ptype, _flags, off, vaddr, _pa, filesz = ph[:6]
            else:
                ptype, off, vaddr, _pa, filesz = ph[:5]
            if ptype == PT_LOAD:
                self.loads.append((off, vaddr, filesz))
        self.loads.sort()
        raw = []
        for i in range(shnum):
            at = shoff + i * shentsize
            if at + struct.calcsize(shfmt) > len(m):
                raise ElfError("section header %d past the end of the file" % i)
            sh = struct.unpack_from(shfmt, m, at)
            name, stype, flags, addr, off, size, link, info, _align, entsize = sh
            raw.append((name, stype, flags, addr, off, size, link, info, entsize))
        names = raw[shstrndx] if shstrndx < len(raw) else None
        self.sections = [Section(self._str(names[4], n) if names else "", *rest)
                         for n, *rest in raw]
        self.by_name = {}
        for s in self.sections:
            self.by_name.setdefault(s.name, s)

    def _str(self, table_off, idx):
        start = table_off + idx
        if start >= len(self.m):            # a damaged name offset: no name
            return ""
        end = self.m.find(b"\0", start)
        return self.m[start:end if end >= 0 else start].decode("utf-8", "replace")

    def data(self, sec):
        if sec.type == SHT_NOBITS:
            return b""
        return self.m[sec.offset:sec.offset + sec.size]

    def symbols(self, sec):
        """(name, value, size, bind, type, shndx, visibility) of a SYMTAB/DYNSYM section."""
        strtab = self.sections[sec.link] if sec.link < len(self.sections) else None
        fmt = self.e + ("IBBHQQ" if self.is64 else "IIIBBH")
        size = struct.calcsize(fmt)
        data = self.data(sec)
        out = []
        for at in range(0, len(data) - size + 1, sec.entsize or size):
            if self.is64:
                name, info, other, shndx, value, ssize = struct.unpack_from(fmt, data, at)
            else:
                name, value, ssize, info, other, shndx = struct.unpack_from(fmt, data, at)
            out.append((self._str(strtab.offset, name) if strtab and name else "", value, ssize,
                        info >> 4, info & 0xf, shndx, other & 3))
        return out

    def relocations(self, sec):
        rela = sec.type == SHT_RELA
        if self.is64:
            fmt = self.e + ("QQq" if rela else "QQ")
        else:
            fmt = self.e + ("IIi" if rela else "II")
        size = struct.calcsize(fmt)
        data = self.data(sec)
        out = []
        for at in range(0, len(data) - size + 1, sec.entsize or size):
            v = struct.unpack_from(fmt, data, at)
            sym, typ = (v[1] >> 32, v[1] & 0xffffffff) if self.is64 else (v[1] >> 8, v[1] & 0xff)
            out.append(Reloc(v[0], sym, v[2] if rela else None, typ))
        return out

    def relocation_symbols(self, sec):
        """{r_offset: symbol index} of the relocations of a section that name a symbol (perf's
        sort_rela_dyn keeps only those): a PIE's .rela.dyn holds one R_X86_64_RELATIVE, without
        a symbol, per pointer it stores, a million for a big table; read as columns."""
        entsize = 24 if sec.type == SHT_RELA else 16
        if self.is64 and (sec.entsize or entsize) == entsize and \
                self.e == ("<" if sys.byteorder == "little" else ">"):
            data = self.data(sec)
            step = entsize // 8
            mv = memoryview(data)[:len(data) // entsize * entsize]
            try:
                q = mv.cast("Q")
                offsets, infos = q[0::step].tolist(), q[1::step].tolist()
                q.release()
            finally:
                mv.release()
            named = [i >> 32 != 0 for i in infos]
            return {off: i >> 32 for off, i in zip(compress(offsets, named), compress(infos, named))}
        return {r.offset: r.sym for r in self.relocations(sec) if r.sym}

    def build_id(self):
        for sec in self.sections:
            if sec.type == SHT_NOTE:
                found = note_build_id(self.data(sec), self.e)
                if found:
                    return found
        return None

    def has(self, name, stype):
        """True when section ``name`` exists with type ``stype`` (a debug file's copies of
        .dynsym, .plt, ... are NOBITS: present by name, empty in fact)."""
        sec = self.by_name.get(name)
        return sec is not None and sec.type == stype

    def debuglink(self):
        """(file name, crc32) from .gnu_debuglink, or None: the name, NUL-padded to 4 bytes,
        then the CRC-32 of the whole debug file (binutils' bfd_create_gnu_debuglink_section)."""
        sec = self.by_name.get(".gnu_debuglink")
        if sec is None:
            return None
        data = self.data(sec)
        end = data.find(b"\0")
        if end <= 0:
            return None
        at = (end + 4) & ~3
        if at + 4 > len(data):
            return None
        name = bytes(data[:end]).decode("utf-8", "replace")
        return name, struct.unpack_from(self.e + "I", data, at)[0]


def note_build_id(data, endian="<"):
    """The NT_GNU_BUILD_ID of a run of ELF notes (a SHT_NOTE section, /sys/kernel/notes), hex.

        Elf_Nhdr { u32 n_namesz, n_descsz, n_type; } name and desc each padded to 4 bytes
    """
    at = 0
    while at + 12 <= len(data):
        namesz, descsz, ntype = struct.unpack_from(endian + "III", data, at)
        at += 12
        name = data[at:at + namesz]
        at += (namesz + 3) & ~3
        desc = data[at:at + descsz]
        at += (descsz + 3) & ~3
        if ntype == NT_GNU_BUILD_ID and name[:3] == b"GNU":
            return bytes(desc).hex()
    return None


def file_crc32(path):
    """The CRC-32 .gnu_debuglink records for a debug file (the zlib/IEEE one)."""
    crc = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            crc = binascii.crc32(block, crc)
    return crc & 0xffffffff


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
    plt = elf.by_name.get(".plt")
    if plt is None or elf.machine != EM_X86_64:
        return []
    out = [(plt.addr, plt.addr + PLT_ENTRY, ".plt")]
    rela = elf.by_name.get(".rela.plt") or elf.by_name.get(".rel.plt")
    pltsec = elf.by_name.get(".plt.sec")
    if rela is not None and rela.link < len(elf.sections):
        syms = elf.symbols(elf.sections[rela.link])
        relocs = sorted(elf.relocations(rela), key=lambda r: r.offset)
        sec = plt
        if pltsec is not None:
            out[0] = (plt.addr, plt.addr + plt.size, ".plt")
            addr, sec = pltsec.addr, pltsec
        elif len(relocs) * PLT_ENTRY == plt.size:
            out.pop()                       # not lazy: no header
            addr = plt.addr
        else:
            addr = plt.addr + PLT_ENTRY
        for r in relocs:
            name = syms[r.sym][0] if 0 < r.sym < len(syms) else ""
            if not name and r.type == R_X86_64_IRELATIVE and r.addend is not None:
                # get_ifunc_name: the IFUNC (or its alias) at the resolver's address, its name
                # as the symbol table has it: memcpy@@GLIBC_2.14 from a debug file's .symtab,
                # memcpy from .dynsym
                name = table.ifunc_at(r.addend) or ""
            if not name:
                name = "offset_%#x" % (addr - sec.addr + sec.offset)
            out.append((addr, addr + PLT_ENTRY, name + "@plt"))
            addr += PLT_ENTRY
    pltgot, dyn = elf.by_name.get(".plt.got"), elf.by_name.get(".rela.dyn")
    if pltgot is not None and dyn is not None and dyn.link < len(elf.sections):
        syms = elf.symbols(elf.sections[dyn.link])
        by_got = elf.relocation_symbols(dyn)
        code, step = elf.data(pltgot), pltgot.entsize or 8
        for i in range(0, len(code) - step + 1, step):
            idx = by_got.get(_plt_jump_target(code[i:i + step], pltgot.addr + i))
            if idx and idx < len(syms) and syms[idx][0]:
                out.append((pltgot.addr + i, pltgot.addr + i + step, syms[idx][0] + "@plt"))
    return out


class _Names:
    """Symbol names by position, decoded from the string table when first asked: a .symtab of
    a million symbols is read without making a million strings."""

    def __init__(self, strtab, offsets):
        self.strtab, self.offsets, self.cache = strtab, offsets, {}

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        name = self.cache.get(i)
        if name is None:
            start = self.offsets[i]
            end = self.strtab.find(b"\0", start)
            name = self.cache[i] = self.strtab[start:end if end >= 0 else len(self.strtab)].decode(
                "utf-8", "replace")
        return name


def _raw_columns(elf, sec):
    """(st_name, st_info, st_other, st_shndx, st_value, st_size) of every symbol of a section,
    as columns: st_info and st_other as bytes, the rest as sequences of ints."""
    data = elf.data(sec)
    if elf.is64 and (sec.entsize or 24) == 24 and elf.e == ("<" if sys.byteorder == "little" else ">"):
        n = len(data) // 24
        mv = memoryview(data)[:n * 24]
        try:
            q, h, w = mv.cast("Q"), mv.cast("H"), mv.cast("I")
            cols = (w[0::6].tolist(), mv[4::24].tobytes(), mv[5::24].tobytes(),
                    h[3::12].tolist(), q[1::3].tolist(), q[2::3].tolist())
            for v in (q, h, w):
                v.release()
        finally:
            mv.release()
        return cols
    fmt = elf.e + ("IBBHQQ" if elf.is64 else "IIIBBH")
    size = struct.calcsize(fmt)
    rows = [struct.unpack_from(fmt, data, at)
            for at in range(0, len(data) - size + 1, sec.entsize or size)]
    if not elf.is64:
        rows = [(nm, info, other, shndx, value, ssize)
                for nm, value, ssize, info, other, shndx in rows]
    cols = list(zip(*rows)) or [(), (), (), (), (), ()]
    return (list(cols[0]), bytes(cols[1]), bytes(cols[2]), list(cols[3]), list(cols[4]),
            list(cols[5]))


def function_columns(elf, sec):
    """Columns (starts, sizes, bindings, types, names) of the symbols perf's dso__load_sym keeps
    from a SYMTAB/DYNSYM section: named, defined STT_FUNC/STT_GNU_IFUNC, and elf_sym__is_label's
    STT_NOTYPE labels (not hidden/internal, in a section whose name holds "text": assembly
    entry points such as ld.so's _dl_start_user). Column at a time (bytes.translate, compress)."""
    names, info, other, shndx, value, size = _raw_columns(elf, sec)
    kind = info.translate(_KIND)
    if 2 in kind:
        text = [("text" in s.name) for s in elf.sections]
        nsec = len(text)
        vis = other.translate(bytes(b & 3 for b in range(256)))

        def label(i):
            sh = shndx[i]
            return (sh < SHN_LORESERVE and sh < nsec and text[sh]
                    and vis[i] not in (STV_INTERNAL, STV_HIDDEN))
        kind = bytearray(kind)
        for i in compress(range(len(kind)), map(eq, kind, repeat(2))):
            kind[i] = 2 if names[i] and shndx[i] and label(i) else 0
    cand = list(compress(range(len(kind)), kind))
    keep = [names[i] and shndx[i] for i in cand]     # named, defined
    if all(keep):
        sel = kind
    else:
        sel = bytearray(len(kind))
        for i in compress(cand, keep):
            sel[i] = 1
    nm = list(compress(names, sel))
    starts = list(compress(value, sel))
    sizes = list(compress(size, sel))
    binds = bytes(compress(info.translate(_BINDS), sel))
    types = bytes(compress(info.translate(_TYPES), sel))
    strtab = elf.sections[sec.link] if sec.link < len(elf.sections) else None
    return starts, sizes, binds, types, _Names(bytes(elf.data(strtab)) if strtab else b"", nm)


class ElfSymbols:
    """Function symbols of one file, looked up by file offset (see the module docstring).

    ``path`` gives the symbols (.symtab, else .dynsym); ``runtime``, when it is another file
    (the stripped binary whose debug file ``path`` is), gives the PT_LOAD segments and the PLT:
    a debug file keeps the binary's section and segment addresses but not its contents (NOBITS,
    segments of file size 0), so file offsets only map to addresses through the binary itself.
    perf does the same: dso__load's syms_ss and runtime_ss (util/symbol.c).
    """

    def __init__(self, path, runtime=None):
        elf = ElfFile(path)
        run = ElfFile(runtime) if runtime and runtime != path else elf
        try:
            self.path, self.runtime = path, runtime or path
            self.build_id = elf.build_id()
            self.segments = run.loads
            if self.segments and not any(filesz for _off, _va, filesz in self.segments):
                raise ElfError("no loadable contents (a debug file without its binary)")
            self._seg_starts = [s[0] for s in self.segments]
            cols = ([], [], [], [], [])
            for secname, stype in ((".symtab", SHT_SYMTAB), (".dynsym", SHT_DYNSYM)):
                sec = elf.by_name.get(secname)
                if sec is None or sec.type != stype:
                    continue
                # a .symtab keeps glibc's versioned names (fclose@@GLIBC_2.2.5); perf prints
                # them as they are
                cols = function_columns(elf, sec)
                if cols[0]:
                    break              # perf: .symtab when there is one, else .dynsym
            self.table = SymbolTable.from_columns(*cols)
            self.table.add_sized(plt_symbols(run, self.table))
        finally:
            elf.m.close()
            if run is not elf:
                run.m.close()

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
