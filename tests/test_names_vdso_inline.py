"""[vdso] and inlined frames on the real-program captures of tests/data/names (run-time generated
code, python3.14 -X perf and -X perf_jit, recorded on Linux 7.2 with perf 7.2): named frame for
frame as perf 7.2 named them in the guest, from the guest's binaries (their symfs/), its
kallsyms, and the kernel debug package's vdso64.so (tests/data/vdso). The JIT frames themselves
are tests/test_jit*.py's."""
import lzma
import shutil

import pytest

from conftest import DATA, run_cli
from perf_text import parse_script

NAMES = DATA / "names"
RELEASE = "7.2.13+deb14-amd64"


@pytest.fixture(scope="module")
def guest(tmp_path_factory):
    if not (NAMES / "symfs").is_dir():
        pytest.skip("tests/data/names not here")
    root = tmp_path_factory.mktemp("names")
    symfs = root / "symfs"
    for src in (NAMES / "symfs").rglob("*"):
        if src.is_file():
            dst = symfs / src.relative_to(NAMES / "symfs")
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.suffix == ".xz":
                dst.with_suffix("").write_bytes(lzma.open(src).read())
            else:
                shutil.copy(src, dst)
    vdso = symfs / "usr/lib/debug/lib/modules" / RELEASE / "vdso" / "vdso64.so"
    vdso.parent.mkdir(parents=True)
    vdso.write_bytes(lzma.open(DATA / "vdso" / "vdso64.so.xz").read())
    (root / "kallsyms").write_bytes(lzma.open(NAMES / "kallsyms.xz").read())
    return root


@pytest.mark.parametrize("scenario", ["jit_map", "py_perf", "py_perf_jit"])
def test_vdso_and_inlined_frames_as_perf_in_the_guest(scenario, guest):
    folder = NAMES / scenario
    data = guest / (scenario + ".data")
    data.write_bytes(lzma.open(folder / "per-task.data.xz").read())
    r = run_cli("script", data, "-q", "--symfs", guest / "symfs", "--kallsyms", guest / "kallsyms")
    assert r.returncode == 0, r.stderr
    ours = parse_script(r.stdout.decode(), inlined=True)
    theirs = parse_script(lzma.open(folder / "script.txt.xz").read().decode(), inlined=True)
    vdso = inlined = 0
    for key, (_h, frames) in theirs.items():
        mine = ours[key][1]
        if [f[0] for f in mine] != [f[0] for f in frames]:
            continue                # a sample perf left unmerged: the user frames are ours alone
        for a, b in zip(mine, frames):
            if b[2] == "inlined":
                inlined += 1
                assert a == b, key
            elif b[2] == "[vdso]":
                vdso += 1
                # perf's image (stripped, .dynsym) names its exported functions; the debug
                # package's keeps local ones too, which perf leaves [unknown]
                assert a == b or b[1] == "[unknown]" and a[2] == "[vdso]", key
    assert vdso > 0
    assert inlined == sum(f[2] == "inlined" for _h, fr in theirs.values() for f in fr)
