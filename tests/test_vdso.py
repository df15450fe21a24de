"""[vdso] frames named from the recorded kernel's vDSO image (symbols/vdso.py): on the real
captures, frame for frame as perf 7.2 named them in the guest, from the kernel debug package's
vdso64.so under --symfs; the build-id cache's copy only with the recorded build id; and our own
process's image, which perf uses, is a vDSO with its functions."""
import lzma

import pytest

from conftest import CAPTURES, DATA, SCENARIOS, capture, run_cli
from perf_text import parse_script, strip_unmerged_cookie
from deferstitch.symbols.elf import ElfSymbols
from deferstitch.symbols.locate import Locator
from deferstitch.symbols.vdso import VdsoSource, own_image

RELEASE = "7.2.13+deb14-amd64"
VDSO = DATA / "vdso" / "vdso64.so.xz"
VDSO_ID = "2d088801b84238bbf4e2bf5258c572f6b09512e2"


@pytest.fixture(scope="module")
def symfs(tmp_path_factory, request):
    """A --symfs holding the guest's workloads and its kernel's vdso64.so where
    linux-image-*-dbg installs it."""
    root = tmp_path_factory.mktemp("vdso-symfs")
    d = root / "usr/lib/debug/lib/modules" / RELEASE / "vdso"
    d.mkdir(parents=True)
    (d / "vdso64.so").write_bytes(lzma.open(VDSO).read())
    (root / "opt/rig").mkdir(parents=True)
    for name in ("workload_a", "workload_b", "workload_c"):
        (root / "opt/rig" / name).write_bytes((CAPTURES / "bin" / name).read_bytes())
    return root


@pytest.mark.parametrize("scenario", sorted(set(SCENARIOS) - {"baseline_fp_nodefer"}))
def test_vdso_frames_named_as_perf_in_the_guest(scenario, symfs):
    path, folder = capture(scenario)
    theirs = parse_script(lzma.open(folder / "script.txt.xz").read().decode())
    r = run_cli("script", path, "-q", "--symfs", symfs, "--kallsyms", CAPTURES / "kallsyms.xz")
    assert r.returncode == 0, r.stderr
    ours = parse_script(r.stdout.decode())
    missing = list(theirs)[-1:]         # the oracle's last record may be cut (c_per_task)
    assert all(key in ours for key in theirs if key not in missing)
    compared = 0
    for key, (_head, frames) in theirs.items():
        if key in missing:
            continue
        mine, kept = ours[key][1], strip_unmerged_cookie(frames)
        assert len(mine) == len(frames) or len(kept) < len(frames), key  # zip below: every frame
        for a, b in zip(mine, kept):
            if b[2] == "[vdso]":
                compared += 1
                assert a == b, (key, a, b)
    assert compared == sum(f[2] == "[vdso]" for k, (_h, fr) in theirs.items() if k not in missing
                           for f in fr) > 0


def test_vdso_of_another_build_is_refused(symfs, tmp_path):
    """In the build-id cache (perf's BUILDID_DIR/[vdso]/<id>/vdso) the recorded id picks the
    file; another kernel's image at that place is refused, not used."""
    cache = tmp_path / ".debug"
    right = cache / "[vdso]" / VDSO_ID / "vdso"
    right.parent.mkdir(parents=True)
    right.write_bytes(lzma.open(VDSO).read())
    loc = Locator(None, str(cache))
    assert loc.locate("[vdso]", VDSO_ID).symtab == str(right)
    other = "0" * 40
    wrong = cache / "[vdso]" / other / "vdso"
    wrong.parent.mkdir(parents=True)
    wrong.write_bytes(lzma.open(VDSO).read())
    got = Locator(None, str(cache)).locate("[vdso]", other)
    assert got.symtab is None and VDSO_ID in got.why
    # the release's debug file is refused too when its build id is not the recorded one
    loc = Locator(str(symfs), str(tmp_path / "none"))
    loc.vdso = VdsoSource(RELEASE)
    assert loc.locate("[vdso]", VDSO_ID).kind == "kernel-debuginfo"
    assert Locator(str(symfs), str(tmp_path / "none")).locate("[vdso]", VDSO_ID).symtab is None
    loc.vdso = VdsoSource(RELEASE)
    assert loc.locate("[vdso]", other).symtab is None


def test_own_image_is_this_kernels_vdso(tmp_path):
    image = own_image()
    if image is None:
        pytest.skip("no [vdso] in /proc/self/maps")
    names = {sym[2] for sym in ElfSymbols(image).table.syms}
    assert "__vdso_clock_gettime" in names
    loc = Locator(None, str(tmp_path))
    loc.vdso = VdsoSource(None, running=True)
    assert loc.locate("[vdso]", None).symtab == image
    loc = Locator(None, str(tmp_path))
    loc.vdso = VdsoSource(None, running=False)
    assert loc.locate("[vdso]", None).symtab is None


def test_info_says_which_file_names_vdso_and_inlined_calls(symfs):
    import json
    path, _ = capture("c_per_task")
    r = run_cli("info", path, "--json", "--symfs", symfs)
    assert r.returncode == 0, r.stderr
    rows = {d["dso"]: d for d in json.loads(r.stdout)["dsos"]}
    vdso = str(symfs / "usr/lib/debug/lib/modules" / RELEASE / "vdso" / "vdso64.so")
    assert (rows["[vdso]"]["symbols"], rows["[vdso]"]["via"]) == (vdso, "kernel-debuginfo")
    assert rows["/opt/rig/workload_c"]["dwarf"] == str(symfs / "opt/rig/workload_c")
    assert rows["[vdso]"]["dwarf"] is None        # perf's image has none: no inlined frames there
