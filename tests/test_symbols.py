"""Symbols without perf: our names equal perf 7.x's on the real captures, and the PIE / shared
library offset arithmetic is right against binutils on binaries built here."""
import lzma
import os
import shutil
import subprocess
from collections import Counter

import pytest

from binutils import build_id
from conftest import (CAPTURES, RECORDED_LD, RECORDED_LIBC, SCENARIOS, SID_ROOTFS, cache_build_id,
                      capture, need_sid_perf, recorded_lib, run_cli)
from perf_text import parse_script, strip_unmerged_cookie
from deferstitch.symbols.maps import Maps
from deferstitch.symbols.resolver import Resolver


def build_id_cache(root):
    """perf's layout: ~/.debug/.build-id/<2 hex>/<rest>/elf, for the capture binaries."""
    for name in ("workload_a", "workload_b", "workload_c"):
        src = CAPTURES / "bin" / name
        bid = build_id(src)
        d = root / ".build-id" / bid[:2] / bid[2:]
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, d / "elf")
    return root


@pytest.fixture(scope="module")
def symbol_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("sym")
    (root / "kallsyms").write_bytes(lzma.open(CAPTURES / "kallsyms.xz").read())
    build_id_cache(root / ".debug")
    return root


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_names_equal_perf7_from_the_same_cache(scenario, symbol_env):
    tool = need_sid_perf()
    path, _ = capture(scenario)
    shutil.copy(path, symbol_env / "in.data")
    p = subprocess.run([tool, "script", "-i", "in.data", "--kallsyms=./kallsyms"], cwd=symbol_env,
                       capture_output=True, text=True, timeout=600,
                       env={**os.environ, "SID_BINDS": "%s:/root/.debug" % (symbol_env / ".debug")})
    assert p.returncode == 0, p.stderr[-1000:]
    theirs = parse_script(p.stdout)
    # perf runs in the rig's sid chroot and finds libc & co. at their recorded paths there (with
    # the guest's build ids when the rootfs matches): the same files for us through --symfs.
    r = run_cli("script", symbol_env / "in.data", "-q", "--kallsyms", symbol_env / "kallsyms",
                "--buildid-dir", symbol_env / ".debug", "--symfs", SID_ROOTFS)
    assert r.returncode == 0, r.stderr
    named, compared = assert_same_names(parse_script(r.stdout.decode()), theirs)
    assert compared > 1000 and sum(named.values()) > 0.3 * compared


def assert_same_names(ours, theirs):
    """Our `script` frames against perf's, sample by sample (parse_script's): (the frames perf
    named, counted by dso; how many frames were compared)."""
    named, compared = Counter(), 0
    assert set(ours) == set(theirs)
    for key, (_h, frames) in theirs.items():
        mine, kept = ours[key][1], strip_unmerged_cookie(frames)
        if len(kept) < len(frames):     # perf left it unmerged: we may stitch it, after its kernel frames
            assert len(mine) >= len(kept) and "[kernel.kallsyms]" not in {f[2] for f in mine[len(kept):]}, key
        else:
            assert len(mine) == len(kept), (key, mine, kept)
        for a, b in zip(mine, kept):
            assert a[0] == b[0], key
            if b[2] == "[vdso]":
                continue           # perf here reads ITS vdso, not the guest's
            compared += 1
            assert a[2] == b[2], (key, a, b)
            if b[1] != "[unknown]":
                named[b[2]] += 1
                assert a[1] == b[1], (key, a, b)
    return named, compared


@pytest.fixture(scope="module")
def archive(tmp_path_factory, symbol_env):
    """WORK/sym: what `perf archive` packs for the compressed capture (workload_b, the recorded
    libc and ld.so, in perf's build-id cache layout) unpacked into a symfs DIR, so only in DIR/.debug:
    nothing at their recorded paths. WORK also holds the capture and the guest's kallsyms."""
    work = tmp_path_factory.mktemp("archive")
    root = work / "sym"
    wb = CAPTURES / "bin" / "workload_b"
    cache_build_id(root / ".debug", "/opt/rig/workload_b", wb, build_id(wb))
    for lib in (RECORDED_LIBC, RECORDED_LD):
        f = recorded_lib(work, lib)
        cache_build_id(root / ".debug", lib, f, build_id(f))
        f.unlink()
    shutil.copy(capture("compressed")[0], work / "in.data")
    shutil.copy(symbol_env / "kallsyms", work / "kallsyms")
    return work


def ours_under_symfs(work):
    r = run_cli("script", work / "in.data", "-q", "--symfs", work / "sym", "--kallsyms", work / "kallsyms")
    assert r.returncode == 0, r.stderr
    return parse_script(r.stdout.decode())


def test_symfs_alone_reads_its_debug_as_perf_in_the_guest(archive):
    """With --symfs DIR, perf's build-id cache is DIR/.debug (util/symbol.c symbol__config_symfs):
    a `perf archive` unpacked into DIR names workload_b's and libc's frames with --symfs DIR
    alone, as perf 7.2 named them in the guest (the capture's script.txt)."""
    theirs = parse_script(lzma.open(capture("compressed")[1] / "script.txt.xz").read().decode())
    named, _ = assert_same_names(ours_under_symfs(archive), theirs)
    assert named["/opt/rig/workload_b"] > 1000 and named[RECORDED_LIBC] > 1000, named


def test_buildid_dir_given_wins_over_symfs(archive, tmp_path):
    """Ours, not perf's (docs/symbols.md): an explicit --buildid-dir is the cache, even with
    --symfs DIR; here an empty one, so DIR/.debug names nothing."""
    r = run_cli("script", archive / "in.data", "-q", "--symfs", archive / "sym",
                "--kallsyms", archive / "kallsyms", "--buildid-dir", tmp_path)
    assert r.returncode == 0, r.stderr
    frames = [f for _h, fr in parse_script(r.stdout.decode()).values() for f in fr
              if f[2] in ("/opt/rig/workload_b", RECORDED_LIBC)]
    assert len(frames) > 1000 and {f[1] for f in frames} == {"[unknown]"}


def test_symfs_alone_reads_its_debug_as_perf7(archive):
    """The same tree, and perf 7.2 here given `--symfs DIR` alone (its HOME in the rig is empty)."""
    tool = need_sid_perf()
    p = subprocess.run([tool, "script", "-i", "in.data", "--symfs", "sym", "--kallsyms=./kallsyms"],
                       cwd=archive, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-1000:]
    named, _ = assert_same_names(ours_under_symfs(archive), parse_script(p.stdout))
    assert named["/opt/rig/workload_b"] > 1000 and named[RECORDED_LIBC] > 1000, named


def test_symbols_need_the_right_build_id(symbol_env, tmp_path):
    path, _ = capture("a_per_task")
    wrong = tmp_path / ".debug"
    build_id_cache(wrong)
    # put workload_b where workload_a's build id points: it must be refused
    a_dir = next((wrong / ".build-id").glob("32/*"))
    shutil.copy(CAPTURES / "bin" / "workload_b", a_dir / "elf")
    r = run_cli("folded", path, "-q", "--kallsyms", symbol_env / "kallsyms", "--buildid-dir", wrong)
    assert b";main;" not in r.stdout and b";[workload_a];" in r.stdout
    r = run_cli("folded", path, "-q", "--kallsyms", symbol_env / "kallsyms", "--buildid-dir", symbol_env / ".debug")
    assert b";main;" in r.stdout


def test_no_symbols_keeps_raw_names():
    path, _ = capture("a_per_task")
    r = run_cli("script", path, "-q", "--no-symbols")
    assert b"[unknown] ([kernel.kallsyms])" in r.stdout and b"+0x" not in r.stdout


SO_SRC = "int lib_leaf(int x) { return x * 3 + 1; }\nint lib_mid(int x) { return lib_leaf(x) + 2; }\n"
PROG_SRC = ("int lib_mid(int);\nstatic int helper(int x) { return lib_mid(x) - 1; }\n"
            "int main(int argc, char **argv) { return helper(argc); }\n")


def need(tool, pkg):
    if shutil.which(tool) is None:
        pytest.skip("%s not installed: apt-get install %s" % (tool, pkg))


def loads(path):
    """PT_LOAD (p_offset, p_vaddr) from readelf, as the dynamic loader maps them."""
    out = subprocess.run(["readelf", "-lW", str(path)], capture_output=True, text=True).stdout
    segs = []
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == "LOAD":
            segs.append((int(parts[1], 16), int(parts[2], 16), int(parts[5], 16)))
    return segs


def nm_functions(path):
    out = subprocess.run(["nm", "--defined-only", str(path)], capture_output=True, text=True).stdout
    return {p[2]: int(p[0], 16) for p in (l.split() for l in out.splitlines()) if len(p) == 3 and p[1] in "tT"}


@pytest.mark.parametrize("kind", ["pie", "so", "nopie"])
def test_offsets_for_pie_so_and_fixed_executables(tmp_path, kind):
    need("gcc", "gcc")
    need("addr2line", "binutils")
    (tmp_path / "lib.c").write_text(SO_SRC)
    (tmp_path / "prog.c").write_text(PROG_SRC)
    so, prog = tmp_path / "libt.so", tmp_path / "prog"
    subprocess.run(["gcc", "-O0", "-g", "-shared", "-fPIC", "-o", so, tmp_path / "lib.c"], check=True)
    flags = {"pie": ["-fPIE", "-pie"], "nopie": ["-fno-pie", "-no-pie"], "so": ["-fPIE", "-pie"]}[kind]
    subprocess.run(["gcc", "-O0", "-g", *flags, "-o", prog, tmp_path / "prog.c", so], check=True)
    target = so if kind == "so" else prog
    base = 0x7f0000000000 if kind != "nopie" else 0
    maps = Maps()
    for off, vaddr, filesz in loads(target):       # what mmap2 records: page-aligned segments
        length = ((vaddr & 0xfff) + filesz + 0xfff) & ~0xfff
        maps.add(42, base + (vaddr & ~0xfff), length, off & ~0xfff, str(target))
    res = Resolver(maps)
    functions = nm_functions(target)
    for name in ("lib_leaf", "lib_mid") if kind == "so" else ("helper", "main"):
        vaddr = functions[name]
        ip = base + vaddr + 4
        sym, off, dso = res.frame(42, ip)
        a2l = subprocess.run(["addr2line", "-f", "-e", str(target), hex(vaddr + 4)],
                             capture_output=True, text=True).stdout.split()[0]
        assert (sym, off, dso) == (a2l, 4, str(target)) == (name, 4, str(target))
