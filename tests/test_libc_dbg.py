"""Frame for frame against perf 7.2 on a real capture of a multi-threaded C program spending its
time in glibc 2.43, named with and without glibc's debug files (tests/data/libc_dbg, its README
says how it was made). Two of perf's rules show there on every run:

- __syscall_cancel_arch_end, a zero-size STT_NOTYPE label at the return address of the system
  call inside __syscall_cancel_arch (libc6-dbg's .symtab): perf names the function
  (__syscall_cancel_arch+0x2e), the user frame of every kernel sample in a system call;
- libc's own PLT slots of R_X86_64_IRELATIVE relocations (get_ifunc_name): the IFUNC's name as
  the symbol table has it, memcpy@@GLIBC_2.14@plt from the debug file, memcpy@plt from .dynsym.

What may differ, and only so (as in test_lang_captures): a sample perf left unmerged, a chain
perf discarded for a stray context value, and, without the debug files, a [vdso] frame perf on
the host left [unknown] (the guest's image is ours here)."""
import lzma
import shutil

import pytest

from conftest import DATA, run_cli
from guest_symfs import Guest
from perf_text import compare_frames, parse_script

LIBC = DATA / "libc_dbg"


@pytest.fixture(scope="module")
def guest(tmp_path_factory):
    """The guest's symfs (with the debug files), kallsyms and a work dir; and a copy of the
    symfs without /usr/lib/debug."""
    g = Guest(LIBC, tmp_path_factory.mktemp("libc_dbg"))
    g.bare = g.work / "symfs-nodebug"
    shutil.copytree(g.root, g.bare, ignore=lambda d, names: ["debug"] if d.endswith("/usr/lib") else [])
    return g


def compare(perf_file, symfs, guest):
    """(Counter of differences by kind, the first few, frames compared, perf's text)."""
    perf = lzma.decompress((LIBC / "libc" / perf_file).read_bytes()).decode()
    r = run_cli("script", guest.unpack("libc", "per-task.data"), "--symfs", symfs,
                "--kallsyms", guest.kallsyms, "--max-stack", "1024", "--no-inline", "-q")
    assert r.returncode == 0, r.stderr
    theirs, mine = parse_script(perf), parse_script(r.stdout.decode())
    assert theirs.keys() == mine.keys(), "samples differ"
    bad, first, frames, _ = compare_frames(theirs, mine, lambda p, o: "vdso-unknown-on-host"
                                           if p[2] == "[vdso]" and p[1] == "[unknown]" else "name")
    return bad, first, frames, perf


def test_names_as_perf_72_with_debug_files(guest):
    bad, first, frames, perf = compare("script-noinline.txt.xz", guest.root, guest)
    assert frames > 5000
    assert perf.count("__syscall_cancel_arch+0x2e ") > 500 and "__syscall_cancel_arch_end" not in perf
    assert "memcpy@@GLIBC_2.14@plt" in perf and "__strchrnul_ifunc@plt" in perf
    assert not {k: n for k, n in bad.items() if k not in ("perf-left-unmerged", "perf-discarded-chain")}, \
        (bad, first)
    assert bad["perf-discarded-chain"] <= 2


def test_names_as_perf_72_without_debug_files(guest):
    """perf 7.2 on the host (tools/sid-perf, the same 7.2.13) with the symfs minus /usr/lib/debug."""
    bad, first, frames, perf = compare("script-noinline-nodebug.txt.xz", guest.bare, guest)
    assert frames > 5000
    assert " memcpy@plt+" in perf and "@@GLIBC" not in perf
    assert not {k: n for k, n in bad.items()
                if k not in ("perf-left-unmerged", "perf-discarded-chain", "vdso-unknown-on-host")}, \
        (bad, first)
    assert bad["perf-discarded-chain"] <= 2
