"""The DWARF reader's twins give the same answers: deferstitch._dwarf.Reader (C) and
dwarf_walk.PyReader (pyelftools, the definition) on every binary with DWARF the tests carry
(the captures' workloads, the guest's C++, Rust and Go programs, unpacked) and on programs
built here in each form a compiler writes (gcc DWARF 4 and 5, clang's DWARF 5 indexes, g++
templates, compressed with zlib, zlib-gnu and zstd): for each address, the same functions
with the same ranges, the same names and the same unit language; or both refuse.

Also: both stay within their budgets (units' indexes kept), compressed sections give the same
chains as stored ones, and damaged DWARF raises a ValueError from C, never a crash.
"""
import random
import shutil
import subprocess
import sys

import pytest

from conftest import DATA, ROOT, need_built
from guest_symfs import Guest
from test_inline import NESTED_SRC
from deferstitch.symbols import dwarf_walk
from deferstitch.symbols.debug_sections import DebugSections
from deferstitch.symbols.elf import ElfSymbols

try:
    from deferstitch import _dwarf
except ImportError:
    _dwarf = None

ADDRS = 1500                 # addresses asked of each binary (spread over its functions)

CXX_SRC = r"""
#include <map>
#include <string>
#include <vector>
template <typename T> struct Acc { T v{}; inline void add(T x) { v += x * 3 + (x >> 1); } };
template <typename T> static inline T fold(const std::vector<T> &xs)
{ Acc<T> a; for (auto x : xs) a.add(x); return a.v; }
namespace ns { struct W { std::map<std::string, long> m;
  __attribute__((noinline)) long run(int n) { std::vector<long> v(n); for (int i = 0; i < n; i++) v[i] = i;
    m["x"] += fold(v); return m["x"] + fold(std::vector<int>(n, 2)); } }; }
int main(int argc, char **) { ns::W w; return (int)w.run(argc * 100) & 1; }
"""
BUILDS = {                  # name: (compiler, source, flags, objcopy flags or None)
    "gcc-dwarf4": ("gcc", NESTED_SRC, ["-O2", "-gdwarf-4"], None),
    "gcc-dwarf5": ("gcc", NESTED_SRC, ["-O2", "-gdwarf-5"], None),
    "clang-dwarf5": ("clang-14", NESTED_SRC, ["-O2", "-gdwarf-5"], None),
    "gxx": ("g++", CXX_SRC, ["-O2", "-g"], None),
    "gxx-zlib": ("g++", CXX_SRC, ["-O2", "-g"], ["--compress-debug-sections=zlib"]),
    "gxx-zlib-gnu": ("g++", CXX_SRC, ["-O2", "-g"], ["--compress-debug-sections=zlib-gnu"]),
    "gxx-zstd": ("g++", CXX_SRC, ["-O2", "-g"], ["--compress-debug-sections=zstd"]),
}


@pytest.fixture(scope="module")
def carried(tmp_path_factory):
    """The binaries with DWARF that tests/data carries, unpacked."""
    work = tmp_path_factory.mktemp("guest")
    root = Guest(DATA / "langs", work).root
    out = sorted(p for p in root.rglob("*") if p.is_file() and _has_dwarf(p))
    out += sorted(p for p in (DATA / "real" / "captures" / "bin").glob("workload_*") if _has_dwarf(p))
    return out


def _has_dwarf(path):
    try:
        return ".debug_info" in DebugSections(str(path)).sections
    except (OSError, ValueError):
        return False


def build(name, tmp_path):
    cc, src, flags, objcopy = BUILDS[name]
    if shutil.which(cc) is None:
        pytest.skip("%s not installed: apt-get install %s" % (cc, cc))
    source = tmp_path / ("p.cc" if cc == "g++" else "p.c")
    source.write_text(src)
    prog = tmp_path / name
    subprocess.run([cc, *flags, "-o", prog, source], check=True)
    if objcopy:
        subprocess.run(["objcopy", *objcopy, prog], check=True)
    return prog


def addresses(path, n=ADDRS, seed=7):
    """n addresses of the file's functions: each one's start and end-1, the rest at random
    inside them (the same every run)."""
    table = ElfSymbols(str(path)).table
    funcs = [(s, e) for s, e, _ in table.syms if e > s]
    rnd = random.Random(seed)
    out = [a for s, e in funcs for a in (s, e - 1)]
    rnd.shuffle(out)
    out = out[:n // 2]
    while funcs and len(out) < n:
        s, e = rnd.choice(funcs)
        out.append(rnd.randrange(s, e))
    return out


def answers(reader, addrs):
    """{addr: path and its names and language, or the error's class} of one reader."""
    out = {}
    for a in addrs:
        try:
            found = reader.path(a)
            if found is not None:
                cu, path = found
                found = (cu, reader.language(cu), path, tuple(reader.names(die) for die, _ in path))
            out[a] = found
        except Exception as err:
            out[a] = "refused: %s" % type(err).__name__
    return out


def compare(path):
    need_built("the DWARF reader (deferstitch._dwarf)", _dwarf is not None)
    sections = DebugSections(str(path))
    addrs = addresses(path)
    c = answers(_dwarf.Reader(sections.sections, sections.addr_size, sections.little_endian), addrs)
    py = answers(dwarf_walk.PyReader(sections), addrs)
    diff = [hex(a) for a in addrs if c[a] != py[a]]
    assert not diff, "%s: %d of %d addresses differ, e.g. %s: C %r, Python %r" % (
        path, len(diff), len(addrs), diff[0], c[int(diff[0], 16)], py[int(diff[0], 16)])
    return c


def test_twins_agree_on_carried_binaries(carried):
    assert len(carried) >= 6, carried
    inlined = 0
    for path in carried:
        got = compare(path)
        inlined += sum(1 for v in got.values() if isinstance(v, tuple) and len(v[2]) > 1)
    assert inlined > 100          # inlined calls were found, not only functions


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_twins_agree_on_built_programs(name, tmp_path):
    got = compare(build(name, tmp_path))
    assert any(isinstance(v, tuple) and len(v[2]) > 1 for v in got.values())


@pytest.mark.parametrize("name", ["gxx-zlib", "gxx-zlib-gnu", "gxx-zstd"])
def test_compressed_sections_give_the_stored_answers(name, tmp_path):
    """perf (libdw) reads zstd-compressed DWARF (ELFCOMPRESS_ZSTD) as it reads zlib: so do we,
    on both twins; before, pyelftools refused the zstd one and its inlined frames went."""
    from deferstitch.symbols.dwarf import InlineInfo
    (tmp_path / "stored").mkdir()
    plain = build("gxx", tmp_path / "stored")
    stored, packed = InlineInfo(str(plain)), InlineInfo(str(build(name, tmp_path)))
    assert packed.unread == {}
    addrs = addresses(plain)
    chains = [stored.chain(a) for a in addrs]
    assert any(chains)
    assert [packed.chain(a) for a in addrs] == chains


def test_an_unreadable_section_is_said(tmp_path, monkeypatch):
    """Where zstd cannot be decompressed (no module for it), the section is left out and said."""
    from deferstitch import inflate
    from deferstitch.symbols.dwarf import InlineInfo

    def no_zstd(raw, size):
        raise inflate.NoZstd("no zstd module")
    monkeypatch.setattr(inflate, "zstd_block", no_zstd)
    info = InlineInfo(str(build("gxx-zstd", tmp_path)))
    assert ".debug_info" in info.unread and "zstd" in info.unread[".debug_info"]
    assert info.reader is None and info.chain(0x1000) == ()


def test_indexes_kept_stay_within_budget(carried, monkeypatch):
    """Memory follows the addresses asked, not the DWARF: the Python twin keeps at most
    FUNCS_KEPT functions' entries (one unit over it at most), the C twin its byte budget."""
    biggest = max((p for p in carried if p.stat().st_size < 8 << 20), key=lambda p: p.stat().st_size)
    sections = DebugSections(str(biggest))
    monkeypatch.setattr(dwarf_walk, "FUNCS_KEPT", 50)
    py = dwarf_walk.PyReader(sections)
    units = set()
    for a in addresses(biggest, 150):
        found = py.path(a)
        if found:
            units.add(found[0])
        largest = max((len(v) for v in py._indexes.values()), default=0)
        assert py._kept <= 50 + largest
    assert len(units) > 3 and len(py._indexes) < len(units)
    if _dwarf is not None:
        c = _dwarf.Reader(sections.sections, sections.addr_size, sections.little_endian)
        for a in addresses(biggest, 400):
            c.path(a)
            count, used = c.held()
            assert used <= _dwarf.INDEX_BUDGET or count == 1


DAMAGE = [(".debug_info", 0.5), (".debug_info", 0.01), (".debug_abbrev", 0.5),
          (".debug_rnglists", 0.5), (".debug_aranges", 0.5), (".debug_str", 0.5)]


@pytest.mark.parametrize("section,where", DAMAGE)
def test_damaged_dwarf_never_crashes_the_c_twin(section, where, tmp_path):
    """Truncated and overwritten sections: the C reader answers or raises ValueError, for every
    address asked, in a child process (a crash there fails the test, not the run)."""
    need_built("the DWARF reader (deferstitch._dwarf)", _dwarf is not None)
    prog = build("gxx", tmp_path)
    code = r"""
import random, sys
sys.path.insert(0, %r)
from deferstitch import _dwarf
from deferstitch.symbols.debug_sections import DebugSections
s = DebugSections(sys.argv[1])
rnd = random.Random(int(sys.argv[2]))
secs = dict(s.sections)
name, where = %r, %r
if name in secs:
    data = bytearray(secs[name])
    cut = int(len(data) * where)
    if rnd.random() < 0.5:
        data = data[:cut]
    for _ in range(8):
        if data:
            data[rnd.randrange(len(data))] = rnd.randrange(256)
    secs[name] = bytes(data)
r = _dwarf.Reader(secs, 8, True)
for a in range(0, 0x40000, 7):
    try:
        f = r.path(a)
        if f:
            r.language(f[0])
            for die, _ in f[1]:
                r.names(die)
    except ValueError:
        pass
print("ok")
""" % (str(ROOT), section, where)
    for seed in range(6):
        p = subprocess.run([sys.executable, "-c", code, str(prog), str(seed)],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0 and p.stdout.strip() == "ok", (seed, p.returncode, p.stderr[-2000:])


def test_a_section_name_past_the_file_is_no_name(tmp_path):
    """A damaged section name table's offset, far past the file (found by make fuzz-dwarf):
    sections without names, no OverflowError from the lookup (a traceback in the CLI)."""
    import struct
    src = DATA / "real" / "captures" / "bin" / "workload_a"
    data = bytearray(src.read_bytes())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    struct.pack_into("<Q", data, shoff + shstrndx * shentsize + 0x18, 0xffffffffffffff00)
    bad = tmp_path / "workload_a"
    bad.write_bytes(bytes(data))
    sections = DebugSections(str(bad))
    assert set(sections.elf.by_name) == {""} and not sections.sections
