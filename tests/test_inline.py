"""Inlined frames (symbols/dwarf.py) as perf 7.2 printed them in the guest: in ``script`` frame
for frame, with their names, the holder's offset and "(inlined)"; in folded, speedscope and
pprof as frames of their own (pprof: a Line each in the Location of their address); none with
``--no-inline``."""
import os
import json
import lzma
import re
from collections import Counter

import pytest

from conftest import CAPTURES, SCENARIOS, capture, run_cli
from perf_text import parse_script
from google_pprof import read_profile


NAMED = {"/opt/rig/workload_a", "/opt/rig/workload_b", "/opt/rig/workload_c", "inlined",
         "[kernel.kallsyms]"}


@pytest.fixture(scope="module")
def symbols(capture_symbols):
    return capture_symbols


def ours(path, symbols, *extra):
    r = run_cli("script", path, "-q", *symbols, *extra)
    assert r.returncode == 0, r.stderr
    return r.stdout.decode()


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_script_frames_equal_perf_inlined_included(scenario, symbols):
    """Every sample of perf's script.txt, all its frames, inlined ones included (the oracle's
    last record may be cut: c_per_task's is capped at 16 MB)."""
    path, folder = capture(scenario)
    theirs = parse_script(lzma.open(folder / "script.txt.xz").read().decode(), inlined=True)
    mine = parse_script(ours(path, symbols), inlined=True)
    last = list(theirs)[-1]
    inlined = compared = 0
    for key, (_head, frames) in theirs.items():
        if key == last and scenario == "c_per_task":
            continue
        got = [f for f in mine[key][1] if f[2] != "[vdso]"]     # [vdso]: tests/test_vdso.py
        want = [f for f in frames if f[2] != "[vdso]"]
        if want and want[-1] == (want[-1][0], "[unknown]", "[unknown]") and all(
                f[2] == "[kernel.kallsyms]" for f in want[:-1]):
            want = want[:-1]            # perf's unmerged sample: its cookie as a last frame
            got = got[:len(want)]
        # every frame at its place; names where the guest's files are here (the workloads,
        # their inlined calls, the kernel: capture_symbols; not the guest's libc or ld.so)
        assert [f[::2] for f in got] == [f[::2] for f in want], key
        assert [f for f in got if f[2] in NAMED] == [f for f in want if f[2] in NAMED], key
        compared += len(want)
        inlined += sum(f[2] == "inlined" for f in want)
    assert compared > 1000
    assert inlined == sum(f[2] == "inlined" for _h, fr in theirs.values() for f in fr) - (
        sum(f[2] == "inlined" for f in theirs[last][1]) if scenario == "c_per_task" else 0)


def test_script_fields_inlined_count_c_per_task(symbols):
    """perf's `-F comm,tid,time,ip,sym,dso` oracle of c_per_task has 7993 "(inlined)" lines in
    the samples it shows: ours, without offsets, name the same functions at the same places."""
    path, folder = capture("c_per_task")
    text = lzma.open(folder / "script-fields.txt.xz").read().decode()
    theirs = parse_script(text, inlined=True)
    mine = parse_script(ours(path, symbols), inlined=True)
    last = list(theirs)[-1]
    n = 0
    for key, (_h, frames) in theirs.items():
        if key == last:
            continue
        got = [(ip, re.sub(r"\+0x[0-9a-f]+$", "", sym), dso) for ip, sym, dso in mine[key][1]]
        for f in frames:
            if f[2] == "inlined":
                n += 1
                i = frames.index(f)
                assert got[i] == f and got[i + 1][0] == f[0] and got[i + 1][2] != "inlined", key
    assert n >= 7990


def folded(path, symbols, *extra):
    r = run_cli("folded", path, "-q", *symbols, *extra)
    assert r.returncode == 0, r.stderr
    return Counter({l.rsplit(" ", 1)[0]: int(l.rsplit(" ", 1)[1]) for l in r.stdout.decode().splitlines()})


def test_folded_and_no_inline(symbols):
    """In folded, an inlined call is the frame above its holder (root first: main;now); with
    --no-inline the same stacks without it, the same total."""
    path, _ = capture("c_per_task")
    with_inl, without = folded(path, symbols), folded(path, symbols, "--no-inline")
    assert sum(with_inl.values()) == sum(without.values())
    assert any(";main;now;" in k for k in with_inl) and not any(";now;" in k for k in without)
    dropped = Counter()
    for k, v in with_inl.items():
        dropped[re.sub(r";main;now(?=;|$)", ";main", k)] += v
    assert dropped == without


def test_speedscope_and_pprof_carry_inlined_frames(symbols, tmp_path):
    path, _ = capture("c_per_task")
    out = tmp_path / "s.json"
    r = run_cli("export", path, "-q", *symbols, "--format", "speedscope", "-o", out)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    names = [f["name"] for f in doc["shared"]["frames"]]
    now, main = names.index("now"), names.index("main")
    stacks = [s for p in doc["profiles"] for s in p["samples"]]
    assert any(s[i:i + 2] == [main, now] for s in stacks for i in range(len(s)))
    pb = tmp_path / "p.pb.gz"
    r = run_cli("export", path, "-q", *symbols, "--format", "pprof", "-o", pb)
    assert r.returncode == 0, r.stderr
    prof = read_profile(pb)
    strings = prof.string_table
    fname = {f.id: strings[f.name] for f in prof.function}
    # a Location per address; the calls inlined there are its first Lines, the holder last
    multi = [[fname[l.function_id] for l in loc.line] for loc in prof.location if len(loc.line) > 1]
    assert multi and all(lines[-1] == "main" and lines[:-1] == ["now"] for lines in multi)


def plugin_tree(tmp_path, with_elftools):
    """perf_scripts/ and deferstitch/ as the plugin finds them, with pyelftools beside them or
    not (the sid chroot's python3 has none: it comes from this interpreter's copy)."""
    import shutil
    from conftest import ROOT
    tree = tmp_path / ("with" if with_elftools else "without")
    shutil.copytree(ROOT / "perf_scripts", tree / "perf_scripts")
    shutil.copytree(ROOT / "deferstitch", tree / "deferstitch",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    if with_elftools:
        import elftools
        shutil.copytree(os.path.dirname(elftools.__file__), tree / "elftools",
                        ignore=shutil.ignore_patterns("__pycache__"))
    return tree


@pytest.mark.parametrize("mode", ["", "--no-merge-callchains"])
def test_perf_plugin_inlined_frames(mode, tmp_path, symbols):
    """Inside perf 7.2 (its embedded python3.14): with pyelftools importable the plugin prints the
    inlined frames perf script prints, in both merge modes (perf's Python callchain has perf's
    inlined calls under their map's dso: marked as perf script marks them); without, the frames
    we add come without them and it says so once."""
    import subprocess
    from conftest import need_sid_perf
    tool = need_sid_perf()
    path, folder = capture("compressed")
    symfs, kallsyms = symbols[1], symbols[3]
    (tmp_path / "kallsyms").write_bytes(lzma.open(kallsyms).read())
    (tmp_path / "in.data").write_bytes(path.read_bytes())
    want = parse_script(lzma.open(folder / "script.txt.xz").read().decode(), inlined=True)
    n_inlined = sum(f[2] == "inlined" for _h, fr in want.values() for f in fr)
    assert n_inlined > 0
    for with_elftools in (True, False):
        tree = plugin_tree(tmp_path, with_elftools)
        out = tmp_path / ("out-%s.txt" % with_elftools)
        p = subprocess.run([tool, "script", "-i", "in.data", "--kallsyms=./kallsyms", "--symfs=%s" % symfs,
                            *([mode] if mode else []), "-s", str(tree / "perf_scripts" / "stitch.py"),
                            "--", "-o", str(out)], cwd=tmp_path, capture_output=True, text=True,
                           timeout=600, env={**os.environ, "SID_BINDS": "%s:%s %s:%s" % (
                               tree, tree, symfs, symfs)})
        assert p.returncode == 0, p.stderr[-2000:]
        got = parse_script(out.read_text(), inlined=True)
        said = p.stderr.count("pyelftools is not installed: inlined frames are left out")
        inlined = 0
        for key, (_h, frames) in want.items():
            mine = [f for f in got[key][1] if f[2] in NAMED]
            theirs = [f for f in frames if f[2] in NAMED]
            if all(f[2] == "[kernel.kallsyms]" for f in theirs):
                continue        # a sample perf left unmerged: the plugin adds its user frames
            if with_elftools:
                assert mine == theirs, key
                inlined += sum(f[2] == "inlined" for f in mine)
            else:           # perf's own frames keep perf's inlined calls; ours come without
                assert [f for f in mine if f[2] != "inlined"] == [f for f in theirs if f[2] != "inlined"], key
        if with_elftools:
            assert (inlined, said) == (n_inlined, 0)
        else:               # said once, when the first file with DWARF is met (all ours: no merge)
            assert said == 1 if mode else said <= 1


NESTED_SRC = r"""
static inline __attribute__((always_inline)) int leaf(int x) { return x * 3 + (x >> 2); }
static inline __attribute__((always_inline)) int mid(int x)
{ int s = 0; for (int i = 0; i < x; i++) s += leaf(i ^ x); return s; }
static inline __attribute__((always_inline)) int top(int x) { return mid(x) + mid(x + 1) * leaf(x); }
int __attribute__((noinline)) work(int x) { return top(x) * 2 + leaf(x + 7); }
int main(int argc, char **argv) { (void)argv; return work(argc) & 1; }
"""


def addr2line_chains(binary, addrs, tool="addr2line"):
    """{addr: [function, ...]} from binutils' addr2line -f -i: innermost first, the holder last."""
    import subprocess
    out = subprocess.run([tool, "-a", "-f", "-i", "-e", str(binary)] + ["%#x" % a for a in addrs],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    chains, cur = {}, None
    i = 0
    while i < len(out):
        if out[i].startswith("0x"):
            cur = chains.setdefault(int(out[i], 16), [])
            i += 1
            continue
        cur.append(out[i])
        i += 2                  # function, then file:line
    return chains


@pytest.mark.parametrize("cc,dwarf,a2l", [("gcc", "-gdwarf-4", "addr2line"), ("gcc", "-gdwarf-5", "addr2line"),
                                          ("clang-14", "-gdwarf-5", "llvm-addr2line-14")])
def test_nested_chains_equal_addr2line(tmp_path, cc, dwarf, a2l):
    """Every address of a function holding calls inlined three deep (split in several ranges
    at -O2: DW_AT_ranges, .debug_ranges in DWARF 4, .debug_rnglists in 5; clang's DWARF 5 gives
    them as indexes, DW_FORM_rnglistx and DW_FORM_addrx): our chain, innermost first, is
    addr2line's without its last entry (the holder). For clang's output the oracle is LLVM's
    addr2line: binutils 2.40's misses the inlined calls of its DW_FORM_rnglistx ranges."""
    import shutil
    import subprocess
    from deferstitch.symbols.dwarf import InlineInfo
    from deferstitch.symbols.elf import ElfFile, ElfSymbols
    for tool, pkg in ((cc, cc), (a2l, "binutils" if a2l == "addr2line" else "llvm-14")):
        if shutil.which(tool) is None:
            pytest.skip("%s not installed: apt-get install %s" % (tool, pkg))
    (tmp_path / "n.c").write_text(NESTED_SRC)
    prog = tmp_path / "n"
    subprocess.run([cc, "-O2", dwarf, "-o", prog, tmp_path / "n.c"], check=True)
    syms = ElfSymbols(str(prog))
    start, end = next((s, e) for s, e, n in syms.table.syms if n == "work")
    addrs = list(range(start, end))
    want = addr2line_chains(prog, addrs, a2l)
    info = InlineInfo(str(prog))
    depth = Counter()
    for a in addrs:
        got = info.chain(a)
        assert list(got) + ["work"] == want[a], hex(a)
        depth[len(got)] += 1
    assert depth[2] and depth[3] > 0            # leaf in mid in top: chains three deep
    elf = ElfFile(str(prog))
    assert elf.has(".debug_rnglists" if dwarf == "-gdwarf-5" else ".debug_ranges", 1)


def test_flamegraph_has_inlined_frames(symbols, tmp_path):
    """The flame graph draws an inlined call as a frame above its holder (the SVG's frames carry
    their names); --no-inline draws none."""
    path, _ = capture("c_per_task")
    names = {}
    for extra in ((), ("--no-inline",)):
        out = tmp_path / ("f%d.svg" % len(extra))
        r = run_cli("flamegraph", path, "-q", *symbols, "-o", out, *extra)
        assert r.returncode == 0, r.stderr
        names[extra] = set(re.findall(r'data-name="([^"]*)"', out.read_text()))
    assert {"main", "now"} <= names[()]
    assert "main" in names[("--no-inline",)] and "now" not in names[("--no-inline",)]


@pytest.mark.parametrize("section,pattern", [(".debug_info", b"\xff"), (".debug_info", b"\x00"),
                                             (".debug_abbrev", b"\x7f"), (".debug_rnglists", b"\xee")])
def test_damaged_dwarf_costs_only_inlined_frames(tmp_path, section, pattern):
    """A binary whose DWARF is garbage (bytes overwritten in place): its symbols still name the
    frames, inlined frames are left out, no traceback."""
    from deferstitch.symbols.elf import ElfFile
    path, _ = capture("c_per_task")
    root = tmp_path / "symfs"
    (root / "opt/rig").mkdir(parents=True)
    binary = bytearray((CAPTURES / "bin" / "workload_c").read_bytes())
    elf = ElfFile(str(CAPTURES / "bin" / "workload_c"))
    sec = elf.by_name[section]
    elf.m.close()
    binary[sec.offset:sec.offset + sec.size] = pattern * sec.size
    (root / "opt/rig/workload_c").write_bytes(bytes(binary))
    r = run_cli("script", path, "-q", "--symfs", root, "--kallsyms", CAPTURES / "kallsyms.xz")
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr[-2000:]
    text = r.stdout.decode()
    assert " main+0x" in text and "reader_level1+0x" in text
