"""Inlined frames of Go and C++ programs, named as perf 7.2 names them (symbols/dwarf.py
perf_chain, symbols/resolver.py inlined), on every address of their own code.

Go writes its DWARF compressed: SHF_COMPRESSED .debug_* (Go 1.19, as built here), or .zdebug_*
("ZLIB" + size, older Go; made here with objcopy --compress-debug-sections=zlib-gnu), with its
unit ranges in DW_AT_ranges from the unit's DW_AT_low_pc, no .debug_aranges and inlined calls
whose DW_AT_abstract_origin is in another unit. perf 7.2 (Debian's: libdw, no libbfd/libLLVM)
names an address through libdw when libdw finds it (ET_EXEC files; ET_DYN ones from 64 KiB up),
else through `addr2line -a -i -f` (only when the file has a .debug_line section): its answers
go through new_inline_sym (the frame's own symbol when the demangled name equals it, else an
"(inlined)" frame), so a GCC clone (.isra/.constprop) holding inlined code prints no real frame
there, and binutils names some innermost functions by the ELF symbol the first time.

The oracle is perf 7.2 itself (tools/sid-perf, the sid chroot): a perf.data with one sample per
address, at the leaf and at a caller's place (tests/inline_oracle.py), read by it and by us.
Binaries are built here: go (apt-get install golang-go), g++ (apt-get install g++), objcopy.
"""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, need_sid_perf, run_cli
from inline_oracle import every_address_data, script_chains
from deferstitch.symbols.elf import ElfFile, ElfSymbols

SRC = ROOT / "tests" / "data" / "langs" / "src"
GO_PREFIXES = ("main.", "os.", "syscall.", "internal/poll.", "io/fs.")
GO_STRIDE = 3            # Go: every third address of those packages' functions (~18000)


def need(tool, pkg):
    if shutil.which(tool) is None:
        pytest.skip("%s not installed: apt-get install %s" % (tool, pkg))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """{variant: path}, built once, on demand (variants need their tools)."""
    return {"dir": tmp_path_factory.mktemp("langs")}


def objcopy(src, dst, *args):
    need("objcopy", "binutils")
    subprocess.run(["objcopy", *args, str(src), str(dst)], check=True)
    return dst


def go_binary(built, variant):
    """variant: "zlib" (Go's own SHF_COMPRESSED), "plain", "zdebug", "pie"."""
    key = "go-" + variant
    if key in built:
        return built[key]
    need("go", "golang-go")
    d = built["dir"]
    src = d / "go"
    if not src.exists():
        shutil.copytree(SRC / "workload_go", src)
    env = dict(os.environ, GOCACHE=str(d / "gocache"), GOFLAGS="-mod=mod", GO111MODULE="on",
               GOPATH=str(d / "gopath"))
    if variant in ("zlib", "pie"):
        out = d / ("wgo_" + variant)
        args = ["go", "build", "-o", str(out)] + (["-buildmode=pie"] if variant == "pie" else [])
        subprocess.run(args + ["."], cwd=src, env=env, check=True, capture_output=True)
    elif variant == "plain":
        out = objcopy(go_binary(built, "zlib"), d / "wgo_plain", "--decompress-debug-sections")
    else:
        out = objcopy(go_binary(built, "plain"), d / "wgo_zdebug", "--compress-debug-sections=zlib-gnu")
    built[key] = out
    return out


def cxx_binary(built, variant):
    """variant: "pie" (addr2line's), "nopie" (libdw's), "big" (a PIE whose code is on both sides
    of libdw's 64 KiB), "zlib" (SHF_COMPRESSED), "zdebug" (.zdebug_*: no .debug_line)."""
    key = "c++-" + variant
    if key in built:
        return built[key]
    need("g++", "g++")
    d = built["dir"]
    src = (SRC / "workload_cpp.cpp").read_text()
    flags = ["-O2", "-g", "-fno-omit-frame-pointer"]
    if variant in ("pie", "nopie", "big"):
        if variant == "big":
            src = ('asm(".text\\n.globl filler\\n.type filler,@function\\nfiller:\\n'
                   '.fill 70000,1,0x90\\nret\\n.size filler,.-filler\\n");\n') + src
        (d / ("c_%s.cpp" % variant)).write_text(src)
        out = d / ("wcpp_" + variant)
        subprocess.run(["g++", *flags] + (["-no-pie"] if variant == "nopie" else [])
                       + ["-o", str(out), str(d / ("c_%s.cpp" % variant))], check=True)
    else:
        out = objcopy(cxx_binary(built, "pie"), d / ("wcpp_" + variant),
                      "--compress-debug-sections=" + ("zlib" if variant == "zlib" else "zlib-gnu"))
    built[key] = out
    return out


def own_addresses(binary, prefixes=None, stride=1, skip=("filler",)):
    """The addresses of .text that the program's functions (or those named with a prefix) hold."""
    text = ElfFile(str(binary)).by_name[".text"]
    lo, hi = text.addr, text.addr + text.size
    syms = ElfSymbols(str(binary))
    out = set()
    for s, e, n in syms.table.syms:
        if (prefixes is None or n.startswith(prefixes)) and n not in skip:
            out.update(range(max(s, lo), min(e, hi)))
    return sorted(out)[::stride]


def compare_with_perf7(binary, addrs):
    tool = need_sid_perf()
    data = binary.parent / (binary.name + ".data")      # sid-run shows perf its cwd alone
    every_address_data(binary, addrs, data)
    p = subprocess.run([tool, "script", "-F", "tid,time,ip,sym,dso", "-i", str(data)],
                       capture_output=True, text=True, cwd=binary.parent, timeout=1200)
    assert p.returncode == 0, p.stderr[-2000:]
    r = run_cli("script", "-q", data)
    assert r.returncode == 0, r.stderr[-2000:]
    theirs = script_chains(p.stdout, addrs)
    ours = script_chains(r.stdout.decode(), addrs)
    assert len(theirs) == 2 * len(addrs)
    bad = [k for k in theirs if theirs[k] != ours.get(k)]
    assert not bad, ["%#x/%d perf %s ours %s" % (k[0], k[1], theirs[k], ours.get(k)) for k in bad[:5]]
    return sum(d == "inlined" for frames in theirs.values() for _s, d in frames)


@pytest.mark.parametrize("variant", ["zlib", "plain", "zdebug", "pie"])
def test_go_frames_equal_perf7(variant, built):
    """Go: SHF_COMPRESSED as Go 1.19 writes it, uncompressed, .zdebug_* (ET_EXEC: all libdw's),
    and a PIE (below 64 KiB perf asks addr2line: binutils' names)."""
    binary = go_binary(built, variant)
    inlined = compare_with_perf7(binary, own_addresses(binary, GO_PREFIXES, GO_STRIDE))
    assert inlined > 1000


@pytest.mark.parametrize("variant", ["pie", "nopie", "big", "zlib", "zdebug"])
def test_cxx_frames_equal_perf7(variant, built):
    """C++: templates, lambdas, std::function thunks, .isra/.constprop clones, inlined methods."""
    binary = cxx_binary(built, variant)
    addrs = own_addresses(binary)
    if variant == "big":
        assert min(addrs) < 0x10000 < max(addrs)
    inlined = compare_with_perf7(binary, addrs)
    assert (inlined == 0) == (variant == "zdebug")      # zdebug: no .debug_line, no addr2line


@pytest.mark.parametrize("variant", ["zlib", "plain", "zdebug"])
def test_go_inlined_syscall_open(variant, built):
    """Without the chroot: perf 7.2 prints `syscall.Open (inlined)` above os.openFileNolog (a
    capture of this program): our chain there has it, from each form of Go's DWARF (the unit
    lookup needs the units' DW_AT_ranges from their DW_AT_low_pc; .zdebug_info counts as DWARF)."""
    sys.path.insert(0, str(ROOT))
    from deferstitch.symbols.dwarf import InlineInfo, has_debug_info
    binary = go_binary(built, variant)
    assert has_debug_info(str(binary))
    info = InlineInfo(str(binary))
    (start, end), = [(s, e) for s, e, n in ElfSymbols(str(binary)).table.syms if n == "os.openFileNolog"]
    chains = {info.chain(a) for a in range(start, end)}
    assert ("syscall.Open",) in chains
    assert info.perf_chain(start + 1)[1]            # ET_EXEC: libdw's, the holder added by perf
