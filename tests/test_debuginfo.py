"""Debug files: a stripped binary named through its debug file, found where perf finds it
(.gnu_debuglink, /usr/lib/debug by build id or path, --symfs), checked against nm and against
perf 6.1's own names on files perf records here (libc6-dbg's libc too); the kernel build-id
warning; info's DSO table."""
import json
import os
import re
import shutil
import subprocess

import pytest

from binutils import build_id, dynsym_names, loads
from conftest import DATA, need_perf61, run_cli
from perf_text import parse_script
from deferstitch.symbols.maps import Maps
from deferstitch.symbols.resolver import Resolver

PROG_SRC = r"""
#include <stdio.h>
#include <stdlib.h>
static volatile unsigned long sink;
static __attribute__((noinline)) unsigned long hidden_work(unsigned long n)
{ unsigned long s = 0; for (unsigned long i = 0; i < n; i++) s += i * i ^ (s >> 3); return s; }
static __attribute__((noinline)) unsigned long hidden_middle(unsigned long n) { return hidden_work(n) + 1; }
static __attribute__((noinline)) void churn(int n)
{ for (int i = 0; i < n; i++) { void *p = malloc(16 + (i * 37) % 4000); sink += (unsigned long)p; free(p); } }
int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 1;
    for (int k = 0; k < rounds; k++) { sink += hidden_middle(20000000); churn(100000); }
    printf("%lu\n", sink);
    return 0;
}
"""
HIDDEN = ("hidden_work", "hidden_middle", "churn")


def need(tool, pkg):
    if shutil.which(tool) is None:
        pytest.skip("%s not installed: apt-get install %s" % (tool, pkg))


def build(d, name="prog", flags=()):
    """prog (full), prog.debug (objcopy --only-keep-debug), prog.stripped (+ .gnu_debuglink)."""
    need("gcc", "gcc")
    need("objcopy", "binutils")
    src = d / (name + ".c")
    src.write_text(PROG_SRC)
    full, dbg, stripped = d / name, d / (name + ".debug"), d / (name + ".stripped")
    subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", *flags, "-o", full, src], check=True)
    subprocess.run(["objcopy", "--only-keep-debug", full, dbg], check=True)
    subprocess.run(["objcopy", "--strip-all", "--add-gnu-debuglink=%s" % dbg, full, stripped], check=True)
    return full, dbg, stripped


def nm_functions(path):
    out = subprocess.run(["nm", "--defined-only", str(path)], capture_output=True, text=True).stdout
    return {p[2]: int(p[0], 16) for p in (l.split() for l in out.splitlines()) if len(p) == 3 and p[1] in "tT"}


def load_maps(target, pid=7, base=0x7f0000000000):
    """MMAP2s as the loader maps target's PT_LOAD segments at base (a PIE): the segments as
    readelf prints them, not as our ELF reader (the code under test) reads them."""
    maps = Maps()
    for off, vaddr, filesz in loads(target):
        length = ((vaddr & 0xfff) + filesz + 0xfff) & ~0xfff
        maps.add(pid, base + (vaddr & ~0xfff), length, off & ~0xfff, "/opt/app/prog")
    return maps


def place(layout, root, stripped, dbg, build_id):
    """Put the stripped binary at /opt/app/prog under root (a --symfs) and its debug file where
    perf looks for it in that layout; returns the debug file's path."""
    app = root / "opt" / "app"
    app.mkdir(parents=True)
    shutil.copy(stripped, app / "prog")
    if not layout.startswith("debuglink"):      # found by build id or path alone
        subprocess.run(["objcopy", "--remove-section=.gnu_debuglink", app / "prog"], check=True)
    where = {
        "buildid-debuginfo": root / "usr/lib/debug/.build-id" / build_id[:2] / (build_id[2:] + ".debug"),
        "fedora-debuginfo": root / "usr/lib/debug/opt/app/prog.debug",
        "debuglink-dir": app / dbg.name,
        "debuglink-dot-debug": app / ".debug" / dbg.name,
        "debuglink-debug-root": root / "usr/lib/debug/opt/app" / dbg.name,
    }[layout]
    where.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(dbg, where)
    return where


@pytest.mark.parametrize("layout", ["buildid-debuginfo", "fedora-debuginfo", "debuglink-dir",
                                    "debuglink-dot-debug", "debuglink-debug-root"])
def test_debug_file_names_what_the_stripped_binary_cannot(tmp_path, layout):
    full, dbg, stripped = build(tmp_path)
    bid = build_id(full)
    root = tmp_path / "symfs"
    debug_file = place(layout, root, stripped, dbg, bid)
    want = nm_functions(full)
    assert not set(HIDDEN) & set(nm_functions(stripped))       # stripped: nothing to name them by
    base = 0x7f0000000000
    res = Resolver(load_maps(root / "opt/app/prog"), symfs=str(root), buildid_dir=str(tmp_path / "empty"))
    res.build_ids["/opt/app/prog"] = bid
    for name in HIDDEN:
        assert res.frame(7, base + want[name] + 3) == (name, 3, "/opt/app/prog"), layout
    where = res.locator.locate("/opt/app/prog", bid)
    assert (where.symtab, where.runtime) == (str(debug_file), str(root / "opt/app/prog"))
    assert where.kind == ("debuglink" if layout.startswith("debuglink") else layout)
    # without the debug file the same frames have no name (the binary alone cannot name them)
    debug_file.unlink()
    res = Resolver(load_maps(stripped), symfs=str(root), buildid_dir=str(tmp_path / "empty"))
    res.build_ids["/opt/app/prog"] = bid
    assert res.frame(7, base + want["hidden_work"] + 3)[0] is None


def test_debug_file_found_by_the_binarys_own_build_id(tmp_path):
    """No build id recorded for the dso (perf record lists only some of the dsos it hit: ld.so
    often missing): perf reads the binary's own id and finds .build-id/xx/rest.debug by it; so do
    we (libc6-dbg keeps ld.so's debug file only there)."""
    full, dbg, stripped = build(tmp_path)
    root = tmp_path / "symfs"
    debug_file = place("buildid-debuginfo", root, stripped, dbg, build_id(full))
    res = Resolver(load_maps(root / "opt/app/prog"), symfs=str(root), buildid_dir=str(tmp_path / "empty"))
    assert res.frame(7, 0x7f0000000000 + nm_functions(full)["hidden_work"] + 3) == \
        ("hidden_work", 3, "/opt/app/prog")
    assert res.locator.locate("/opt/app/prog", None).symtab == str(debug_file)


@pytest.mark.parametrize("recorded", [True, False])
def test_debug_file_of_another_build_is_refused(tmp_path, recorded):
    """Against the recorded build id, or, with none recorded, the binary's own."""
    full, _dbg, stripped = build(tmp_path)
    bid = build_id(full)
    (tmp_path / "other").mkdir()
    _full2, dbg2, _s2 = build(tmp_path / "other", flags=["-DOTHER=1", "-O2"])
    root = tmp_path / "symfs"
    place("fedora-debuginfo", root, stripped, dbg2, bid)       # the wrong one, at the right place
    res = Resolver(load_maps(stripped), symfs=str(root), buildid_dir=str(tmp_path / "empty"))
    if recorded:
        res.build_ids["/opt/app/prog"] = bid
    assert res.frame(7, 0x7f0000000000 + nm_functions(full)["hidden_work"] + 3)[0] is None
    assert ("build id %s, %s %s" % (build_id(dbg2.parent / "prog"),
                                    "recorded" if recorded else "the binary's", bid)
            in res.refused["/opt/app/prog"])


def test_debuglink_crc_decides_without_build_ids(tmp_path):
    full, dbg, stripped = build(tmp_path, flags=["-Wl,--build-id=none"])
    assert build_id(full) is None
    root = tmp_path / "symfs"
    debug_file = place("debuglink-dot-debug", root, stripped, dbg, "")
    res = Resolver(load_maps(stripped), symfs=str(root), buildid_dir=str(tmp_path / "empty"))
    ip = 0x7f0000000000 + nm_functions(full)["hidden_work"] + 3
    assert res.frame(7, ip)[0] == "hidden_work"
    with open(debug_file, "ab") as f:         # another file under the linked name
        f.write(b"\0")
    res = Resolver(load_maps(stripped), symfs=str(root), buildid_dir=str(tmp_path / "empty"))
    assert res.frame(7, ip)[0] is None
    assert "CRC-32" in res.refused["/opt/app/prog"]


# -- against perf 6.1, on files it records here -------------------------------------------------

def record(tmp_path, argv, out="perf.data"):
    """perf record -g of argv with an empty build-id cache; skipped where perf cannot record."""
    perf, _version = need_perf61()
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home)}
    p = subprocess.run([perf, "record", "-q", "--no-buildid-cache", "-e", "cpu-clock", "-F", "4000",
                        "-g", "-o", str(tmp_path / out), "--", *map(str, argv)],
                       capture_output=True, text=True, env=env, timeout=120)
    if p.returncode != 0 or not (tmp_path / out).exists():
        pytest.skip("perf record cannot record here (perf_event_paranoid, container?): %s"
                    % p.stderr.strip()[-200:])
    return perf, env, tmp_path / out


def perf_names(perf, env, data, *opts):
    p = subprocess.run([perf, "script", "-i", str(data), *opts], capture_output=True, text=True,
                       env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-500:]
    return parse_script(p.stdout)


def compare(ours, theirs, want_dso, only=None):
    """(frames whose names were compared, names of want_dso). Every sample has perf's frames
    and every frame perf's dso; sym+off must be equal (``only``: in that dso alone). PLT slots
    are left out of the names: perf 6.1 writes an IRELATIVE slot as a bare "@plt" where newer
    perf (and we) name it after its resolver, and when a zero-sized symbol stretched over .plt
    (_init from a .symtab) overlaps a slot, its rb-tree walk may return either. (perf 6.1
    prints a user frame's address in its file, not the ip: addresses are not compared.)"""
    compared, names = 0, set()
    assert set(ours) == set(theirs)
    for key, (_h, frames) in theirs.items():
        mine = ours[key][1]
        assert len(mine) == len(frames), (key, mine, frames)
        for a, b in zip(mine, frames):
            assert a[2] == b[2], (key, a, b)
            if "@plt" in a[1] + b[1] or only not in (None, b[2]):
                continue
            compared += 1
            assert a[1] == b[1], (key, a, b)
            if b[2] == want_dso and b[1] != "[unknown]":
                names.add(b[1].split("+")[0])
    return compared, names


@pytest.mark.parametrize("layout", ["buildid-debuginfo", "debuglink-dot-debug"])
def test_names_equal_perf61_through_debug_files(tmp_path, layout):
    """A stripped binary recorded by perf 6.1, its debug file under a --symfs: perf's names and
    ours, frame for frame (perf tries no local kallsyms under --symfs, nor do we)."""
    full, dbg, stripped = build(tmp_path)
    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(stripped, app / "prog")
    perf, env, data = record(tmp_path, [app / "prog", 10])
    root = tmp_path / "symfs"
    rel = root / str(app).lstrip("/")
    rel.mkdir(parents=True)
    shutil.copy(stripped, rel / "prog")
    bid = build_id(full)
    where = (root / "usr/lib/debug/.build-id" / bid[:2] / (bid[2:] + ".debug")
             if layout == "buildid-debuginfo" else rel / ".debug" / dbg.name)
    where.parent.mkdir(parents=True)
    shutil.copy(dbg, where)
    theirs = perf_names(perf, env, data, "--symfs", str(root))
    r = run_cli("script", data, "-q", "--symfs", root, "--buildid-dir", tmp_path / "home" / ".debug")
    assert r.returncode == 0, r.stderr
    # only the binary under test: a library missing from the --symfs is [unknown] in perf, while
    # we then read the recorded path itself (a documented difference)
    compared, names = compare(parse_script(r.stdout.decode()), theirs, str(app / "prog"), str(app / "prog"))
    assert compared > 100 and "hidden_work" in names, names      # the stripped binary names none


def libc_debug_file():
    """libc's path and its libc6-dbg debug file (by build id), or a skip naming the package."""
    ldd = subprocess.run(["ldd", "/bin/true"], capture_output=True, text=True).stdout
    libc = next((l.split("=>")[1].split()[0] for l in ldd.splitlines() if "libc.so" in l and "=>" in l), None)
    if libc is None:
        pytest.skip("no dynamically linked libc found")
    libc = os.path.realpath(libc)
    bid = build_id(libc)
    dbg = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:]) if bid else None
    if not dbg or not os.path.exists(dbg):
        pytest.skip("libc's debug file not installed: apt-get install libc6-dbg")
    return libc, dbg


def test_libc_debug_symbols_equal_perf61(tmp_path):
    """With libc6-dbg, perf names libc's internal functions (_int_malloc, ...) from
    /usr/lib/debug/.build-id/xx/rest.debug: so must we, with the kernel from /proc/kallsyms
    (the recorded kernel is the running one)."""
    libc, dbg = libc_debug_file()
    full, _dbg, _stripped = build(tmp_path)
    perf, env, data = record(tmp_path, [full, 10])
    theirs = perf_names(perf, env, data)
    r = run_cli("script", data, "--buildid-dir", tmp_path / "home" / ".debug")
    assert r.returncode == 0 and not r.stderr, r.stderr
    ours = parse_script(r.stdout.decode())
    recorded_libc = {f[2] for _h, frames in theirs.values() for f in frames if "libc.so" in f[2]}
    assert recorded_libc, "no libc frames recorded"
    compared, names = compare(ours, theirs, recorded_libc.pop())
    debug_only = names - dynsym_names(libc)
    assert compared > 100 and debug_only, (names, debug_only)
    info = run_cli("info", data, "--json", "--buildid-dir", tmp_path / "home" / ".debug")
    rows = {d["dso"]: d for d in json.loads(info.stdout)["dsos"]}
    row = next(d for p, d in rows.items() if "libc.so" in p)
    assert (row["symbols"], row["via"]) == (dbg, "buildid-debuginfo")
    assert os.path.realpath(row["binary"]) == libc


# -- the kernel ---------------------------------------------------------------------------------

SP = DATA / "external" / "perf_data_converter__perf.data.singleprocess-3.4"   # maps the kernel; its build id is no machine's here
LBR = DATA / "external" / "perf.lbr.data"   # kernel frames and build id, but no kernel map


def perf_build_ids(path):
    """{dso: build id} as perf's own ``perf buildid-list`` reads the file's HEADER_BUILD_ID."""
    perf, _v = need_perf61()
    p = subprocess.run([perf, "buildid-list", "-i", str(path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-500:]
    ids = {}
    for line in p.stdout.splitlines():
        bid, dso = line.split(None, 1)
        ids[dso] = bid
    return ids


def kernel_bid(path):
    return perf_build_ids(path)["[kernel.kallsyms]"]


@pytest.mark.parametrize("cmd", ["script", "folded"])
def test_kernel_build_id_not_found_warns_once(tmp_path, cmd):
    # one of the file's six events: folded would say on stderr that it adds them up
    one = ["--event", "cycles"] if cmd == "folded" else []
    r = run_cli(cmd, SP, "--buildid-dir", tmp_path, *one)
    assert r.returncode == 0, r.stderr
    assert r.stderr.decode() == "No kallsyms or vmlinux with build-id %s was found\n" % kernel_bid(SP)
    assert run_cli(cmd, SP, "-q", "--buildid-dir", tmp_path, *one).stderr == b""
    assert run_cli(cmd, LBR, "--buildid-dir", tmp_path).stderr == b""      # no kernel map: no word


@pytest.mark.parametrize("path", [SP, LBR])
def test_kernel_warning_is_perfs_own_line(tmp_path, path):
    """perf 6.1 on the same file, with the same empty build-id cache: the same line, or none."""
    perf, _v = need_perf61()
    shutil.copy(path, tmp_path / "in.data")
    p = subprocess.run([perf, "script", "-i", "in.data"], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ, "HOME": str(tmp_path)})
    assert p.returncode == 0, p.stderr[-500:]
    ours = run_cli("script", tmp_path / "in.data", "--buildid-dir", tmp_path / ".debug").stderr.decode()
    theirs = [l for l in p.stderr.splitlines() if "kallsyms" in l]
    assert ours.splitlines() == theirs


def test_kernel_named_from_the_build_id_cache(tmp_path):
    """perf's cache keeps a recorded kernel's kallsyms at [kernel.kallsyms]/<id>/kallsyms."""
    out = run_cli("script", LBR, "--no-symbols").stdout.decode()
    ips = sorted({int(l.split()[0], 16) for l in out.splitlines()
                  if l.startswith("\t") and "kernel.kallsyms" in l})
    assert ips
    d = tmp_path / "[kernel.kallsyms]" / kernel_bid(LBR)
    d.mkdir(parents=True)
    (d / "kallsyms").write_text("".join("%016x T kfunc_%d\n" % (ip - 0x10, i) for i, ip in enumerate(ips)))
    r = run_cli("script", LBR, "--buildid-dir", tmp_path)
    named = re.findall(rb"\t *([0-9a-f]+) kfunc_(\d+)\+0x([0-9a-f]+) \(\[kernel.kallsyms\]\)", r.stdout)
    assert r.stderr == b"" and len(named) == out.count("[kernel.kallsyms]")
    for ip, i, off in named:        # the nearest symbol at or below each address
        start = ips[int(i)] - 0x10
        assert start + int(off, 16) == int(ip, 16)
        assert not any(start < other - 0x10 <= int(ip, 16) for other in ips)


def test_unreadable_kallsyms_is_one_line(tmp_path):
    (tmp_path / "cut.xz").write_bytes(b"\xfd7zXZ\x00\x00")        # an .xz cut short
    for bad in (tmp_path / "absent", tmp_path, tmp_path / "cut.xz"):
        r = run_cli("script", LBR, "--kallsyms", bad)
        lines = r.stderr.decode().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and str(bad) in lines[0], r.stderr


# -- info ---------------------------------------------------------------------------------------

def test_info_shows_the_dso_table(tmp_path):
    bid = kernel_bid(SP)
    r = run_cli("info", SP, "--buildid-dir", tmp_path)
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode()
    head = text[text.index("\ndso ") + 1:].splitlines()
    assert head[0].split()[:4] == ["dso", "build", "id", "symbols"]
    kernel = next(l for l in head if l.startswith("[kernel.kallsyms]"))
    assert bid in kernel and "No kallsyms or vmlinux with build-id" in kernel
    rows = json.loads(run_cli("info", SP, "--json", "--buildid-dir", tmp_path).stdout)["dsos"]
    assert {"dso", "build_id", "symbols", "via", "binary"} <= set(rows[0])
    # every build id perf reads from the file, on its dso's row, and no other
    assert {r["dso"]: r["build_id"] for r in rows if r["build_id"]} == perf_build_ids(SP)
    assert len(rows) == len({r["dso"] for r in rows}) > 3
    for row in rows:
        if row["symbols"] is None:
            assert row["via"]                       # says why
    assert run_cli("info", SP, "--no-symbols", "--json").returncode == 0
