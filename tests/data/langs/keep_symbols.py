"""Copy an ELF file with the bytes of every section zeroed except what names its code: the ELF
and program headers, the section headers, .dynsym/.dynstr, .symtab/.strtab, the build id note
and .gnu_debuglink, and the PLT with its relocations (perf names PLT entries
``free@plt`` from them). Same size, layout and build id: perf and deferstitch name addresses in it
as in the original, and xz shrinks it to its symbol tables.

Usage: python3 keep_symbols.py BINARY OUT
"""
import struct
import sys

KEEP = {".dynsym", ".dynstr", ".symtab", ".strtab", ".note.gnu.build-id", ".gnu_debuglink",
        ".shstrtab", ".gnu.hash", ".gnu.version", ".gnu.version_d", ".gnu.version_r", ".dynamic",
        ".interp", ".note.ABI-tag", ".rela.plt", ".rela.dyn", ".plt", ".plt.sec", ".plt.got",
        ".got", ".got.plt"}
SHT_NOBITS = 8


def keep_symbols(src, dst):
    data = bytearray(open(src, "rb").read())
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "64-bit little-endian ELF only"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    stroff = secs[shstrndx][4]
    for name_off, stype, _fl, _addr, off, size, *_ in secs:
        end = data.index(b"\0", stroff + name_off)
        name = data[stroff + name_off:end].decode()
        if stype != SHT_NOBITS and name not in KEEP and off and size:
            data[off:off + size] = bytes(size)
    with open(dst, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    keep_symbols(sys.argv[1], sys.argv[2])
