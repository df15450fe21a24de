"""The DWARF sections of an ELF file, as buffers both readers take (dwarf_walk.PyReader and its C
twin _dwarf.Reader): a view of the file's memory map where a section is stored as it is, else
its decompressed bytes.

Compressed sections come in two forms (gABI "Section Compression"; binutils bfd/compress.c):

    SHF_COMPRESSED (0x800) .debug_*:  Elf64_Chdr { u32 ch_type; u32 ch_reserved;
                                                   u64 ch_size; u64 ch_addralign; }
                                      Elf32_Chdr { u32 ch_type; u32 ch_size; u32 ch_addralign; }
                                      ch_type 1 ELFCOMPRESS_ZLIB, 2 ELFCOMPRESS_ZSTD
                                      (gcc -gz=zstd, objcopy --compress-debug-sections=zstd)
    .zdebug_* (zlib-gnu, Go < 1.12):  "ZLIB" u64 big-endian size, then the zlib stream

Only the sections these readers use are read; a stored one costs no memory until its pages are
touched. A section that cannot be read (damaged, or zstd without a zstd module) is left out and
said in ``unread``, so its file gives frames without inlined calls and one warning.
"""
import struct

from .. import inflate
from .elf import SHT_NOBITS, ElfFile

NAMES = (".debug_info", ".debug_abbrev", ".debug_aranges", ".debug_ranges", ".debug_rnglists",
         ".debug_addr", ".debug_str", ".debug_line_str", ".debug_str_offsets",
         ".debug_loclists")     # (pyelftools resolves DW_FORM_loclistx as it reads a DIE)
SHF_COMPRESSED = 0x800
ELFCOMPRESS_ZLIB, ELFCOMPRESS_ZSTD = 1, 2


class DebugSections:
    """``sections``: {name: buffer} of the DWARF sections present and readable; ``unread``:
    {name: why} of those present but not readable; ``little_endian``, ``addr_size``;
    ``mapped``: the names of those that are views of the file's memory map (read-only, their
    pages can be given back once read)."""

    def __init__(self, path):
        self.path = path
        self.elf = elf = ElfFile(path)
        self.little_endian = elf.e == "<"
        self.addr_size = 8 if elf.is64 else 4
        self.sections, self.unread, self.mapped = {}, {}, set()
        for name in NAMES:
            try:
                data = self._read(name)
            except ValueError as err:
                self.unread[name] = str(err)
                continue
            if data is not None:
                self.sections[name] = data

    def _read(self, name):
        elf = self.elf
        sec = elf.by_name.get(name)
        gnu = sec is None
        if gnu:
            sec = elf.by_name.get(".zdebug" + name[len(".debug"):])
        if sec is None or sec.type == SHT_NOBITS or sec.size == 0:
            return None
        if sec.offset + sec.size > len(elf.m):
            raise ValueError("%s: past the end of the file" % sec.name)
        view = memoryview(elf.m)[sec.offset:sec.offset + sec.size]
        if gnu:
            if sec.size < 12 or view[:4] != b"ZLIB":
                raise ValueError("%s: no ZLIB header" % sec.name)
            size = struct.unpack_from(">Q", view, 4)[0]
            return _inflate(sec.name, ELFCOMPRESS_ZLIB, view[12:], size)
        if not sec.flags & SHF_COMPRESSED:
            self.mapped.add(name)
            return view
        fmt = elf.e + ("IIQQ" if elf.is64 else "III")
        hdr = struct.calcsize(fmt)
        if sec.size < hdr:
            raise ValueError("%s: compression header cut off" % sec.name)
        fields = struct.unpack_from(fmt, view, 0)
        ctype, size = fields[0], fields[2] if elf.is64 else fields[1]
        return _inflate(sec.name, ctype, view[hdr:], size)


def _inflate(name, ctype, raw, size):
    """The section's ``size`` bytes, or ValueError saying why not."""
    try:
        if ctype == ELFCOMPRESS_ZLIB:
            data = inflate.zlib_block(raw, size)
        elif ctype == ELFCOMPRESS_ZSTD:
            data = inflate.zstd_block(raw, size)
        else:
            raise ValueError("compression type %d" % ctype)
    except inflate.NoZstd as err:
        raise ValueError("%s: compressed with zstd, and %s" % (name, err)) from None
    except Exception as err:                        # zlib.error, zstd's errors
        raise ValueError("%s: does not decompress (%s)" % (name, err)) from None
    if len(data) != size:
        raise ValueError("%s: decompresses to %d bytes, not the %d its header says"
                         % (name, len(data), size))
    return data
