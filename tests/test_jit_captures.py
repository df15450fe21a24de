"""Frame for frame against perf 7.2 on real captures of run-time generated code (tests/data/names:
a C program writing /tmp/perf-PID.map, python3.14 -X perf, python3.14 -X perf_jit): `deferstitch
script --symfs DIR --kallsyms FILE`, DIR holding the guest's binaries (their symbol tables), its
/tmp/perf-*.map and jit-*.dump, names every frame as perf's `perf script` did in the guest.

Differences are counted by kind: JIT (a /tmp/perf-P.map or jitdump dso), python (py:: names),
other frames must all match; [vdso] frames and perf's inlined lines need the kernel's vDSO image
and DWARF: their own test, with the kernel debug package's vdso64.so under the symfs. Where the dump names a frame that perf (without perf inject --jit) left
[unknown], ours must be the dump's name, the one perf gives after perf inject --jit."""
import lzma
import os
import re
import shutil
import subprocess

import pytest

from conftest import DATA, ROOT, need_built, need_sid_perf, run_cli
from guest_symfs import Guest
from jit_synth import loads
from perf_text import compare_frames, parse_script, strip_unmerged_cookie

NAMES = DATA / "names"
KERNEL = 0xffff800000000000


@pytest.fixture(scope="module")
def guest(tmp_path_factory):
    """The guest's symfs, kallsyms and a work dir, from tests/data/names."""
    return Guest(NAMES, tmp_path_factory.mktemp("names"))


def ours(scenario, guest, *extra):
    root, ks, work = guest
    data = guest.unpack(scenario, "per-task.data")
    r = run_cli("script", data, "--symfs", root, "--kallsyms", ks, *extra)
    assert r.returncode == 0, r.stderr
    return r.stdout.decode()


def kind(frame):
    ip, sym, dso = frame
    if dso == "[vdso]":
        return "vdso"
    if dso.startswith("/tmp/perf-") or dso.endswith(".dump"):
        return "jit"
    if sym.startswith("py::"):
        return "python"
    return "other"


def compare(perf_text, our_text, dump=None):
    """Counter of mismatching frames by kind, and the first few. ``dump``: the scenario whose
    jitdump names what perf left [unknown] in a /tmp/perf-P.map dso."""
    theirs, mine = parse_script(perf_text), parse_script(our_text)
    assert theirs.keys() == mine.keys(), "samples differ"

    def bucket(p, o):
        if dump is not None and p[1] == "[unknown]" and p[2].startswith("/tmp/perf-") \
                and o[0] == p[0] and o[2].endswith(".dump") and o[1] == dump_name_at(dump, p[0]):
            return "named-by-dump"              # perf without perf inject --jit: [unknown]
        return kind(p)
    bad, first, frames, _ = compare_frames(theirs, mine, bucket, excused=("named-by-dump",),
                                           first_max=5)
    return bad, first, frames


SCENARIOS = ["jit_map", "py_perf", "py_perf_jit"]
# kinds compare() counts that are not names we got wrong: see compare() and kind()
NOT_MISMATCHES = ("named-by-dump", "perf-left-unmerged")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_names_as_perf_72(scenario, guest):
    """Strict for every frame but [vdso] (the other test): JIT, python and the rest."""
    perf = lzma.decompress((NAMES / scenario / "script.txt.xz").read_bytes()).decode()
    dump = scenario if scenario == "py_perf_jit" else None
    bad, first, frames = compare(perf, ours(scenario, guest), dump)
    assert frames > 5000
    strict = {k: n for k, n in bad.items() if k not in NOT_MISMATCHES + ("vdso",)}
    assert not strict, (strict, first)
    if scenario == "py_perf_jit":
        assert bad["named-by-dump"] > 500        # the dump's names, where perf has none
    if scenario == "jit_map":                    # the map's names, the unnamed function too
        text = perf
        assert "jit callback [tier 2]+0x" in text and "[unknown] (/tmp/perf-143.map)" in text


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_vdso_and_inlined_frames_as_perf_in_the_guest(scenario, guest):
    """[vdso] frames from the kernel debug package's vdso64.so (tests/data/vdso), inlined calls
    from the guest binaries' DWARF: as perf 7.2 printed them in the guest."""
    mine_all = parse_script(ours(scenario, guest, "-q"), inlined=True)
    theirs = parse_script(lzma.open(NAMES / scenario / "script.txt.xz").read().decode(), inlined=True)
    vdso = inlined = 0
    for key, (_h, frames) in theirs.items():
        mine = mine_all[key][1]
        kernel_only = strip_unmerged_cookie(frames)
        if len(kernel_only) < len(frames):      # perf left it unmerged: the user frames are ours alone
            frames, mine = kernel_only, mine[:len(kernel_only)]
        # every sample: the same frames at the same places, an inlined line where perf has one
        # and nowhere else
        assert [(f[0], f[2] == "inlined") for f in mine] == [(f[0], f[2] == "inlined") for f in frames], key
        for a, b in zip(mine, frames):
            if b[2] == "inlined":
                inlined += 1
                assert a == b, key
            elif b[2] == "[vdso]":
                vdso += 1
                # perf's image (stripped, .dynsym) names its exported functions; the debug
                # package's keeps local ones too, which perf leaves [unknown]
                assert a == b or b[1] == "[unknown]" and a[2] == "[vdso]", key
    assert vdso == sum(f[2] == "[vdso]" for _h, fr in theirs.values() for f in fr) > 0
    assert inlined == sum(f[2] == "inlined" for _h, fr in theirs.values() for f in fr)


def dump_names(scenario):
    return {name for d in (NAMES / scenario).glob("jit-*.dump") for _a, _s, name in loads(d)}


def dump_name_at(scenario, ip):
    """sym+0xoff the scenario's dump gives ip (the test's own reading), or None."""
    for d in (NAMES / scenario).glob("jit-*.dump"):
        for addr, size, name in loads(d):
            if addr <= ip < addr + size:
                return "%s+%#x" % (name, ip - addr)
    return None


def test_dump_names_are_perf_injects(guest):
    """Every JIT name we give from the dump is one perf gives after perf inject --jit (its
    jitted-PID-N.so files hold the same names); perf inject also shows what it costs on a
    deferred capture: no user frame at all."""
    injected = guest.unpack("py_perf_jit", "script-fields-injected.txt").read_text()
    text = ours("py_perf_jit", guest)
    ours_jit = set(re.findall(r" (py::\S+?)\+0x[0-9a-f]+ \(/tmp/jit-232\.dump\)", text))
    assert ours_jit and ours_jit <= dump_names("py_perf_jit")
    assert "py::leaf_stat:/opt/rig/py/pyprog.py" in ours_jit
    user = [ln for ln in injected.splitlines() if ln.startswith("\t") and
            int(ln.split()[0], 16) < KERNEL and "(cookie)" not in ln]
    assert user == []            # perf inject --jit dropped every deferred user stack


def test_stitch_then_perf_inject_jit_names(guest, tmp_path):
    """`deferstitch stitch` then perf 7.2's `perf inject --jit` then `perf script`: the JIT
    frames named by perf itself from the dump, with the user stacks we stitched."""
    sid_perf = need_sid_perf()
    root, ks, work = guest
    data = guest.unpack("py_perf_jit", "per-task.data")
    run = tmp_path / "run"
    (run / "tmp").mkdir(parents=True)         # the guest's /tmp: the dump, and perf inject's .so files
    shutil.copy(root / "tmp" / "jit-232.dump", run / "tmp" / "jit-232.dump")
    stitched = run / "stitched.data"
    r = run_cli("stitch", data, "-o", stitched, "-q", "--no-report")
    assert r.returncode == 0, r.stderr
    shutil.copy(ks, run / "kallsyms")
    env = dict(os.environ, SID_BINDS="%s:/tmp" % (run / "tmp"))
    r = subprocess.run([sid_perf, "inject", "--jit", "-i", "stitched.data", "-o", "injected.data"],
                       cwd=run, env=env, capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sid_perf, "script", "-i", "injected.data", "--kallsyms=./kallsyms",
                        "-F", "comm,tid,time,ip,sym,dso"], cwd=run, env=env, capture_output=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode()
    names = set(re.findall(r" (py::\S+) \(\S*jitted-232-\d+\.so\)", text))
    assert "py::leaf_stat:/opt/rig/py/pyprog.py" in names, text[:2000]
    assert names <= dump_names("py_perf_jit")
    mine = set(re.findall(r" (py::\S+?)\+0x[0-9a-f]+ \(/tmp/jit-232\.dump\)", ours("py_perf_jit", guest)))
    assert names == mine


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("merge", [True, False], ids=["merged", "nomerge"])
def test_perf_plugin_names_jit_frames(scenario, merge, guest, tmp_path):
    """Inside perf 7.2 (`perf script -s perf_scripts/stitch.py`, the map files and dump not at
    /tmp where perf looks, --symfs given): every JIT and [vdso] frame the plugin prints has the
    name `deferstitch script` gives it, whether perf handed the frame over (merged: perf's
    [unknown] replaced by ours) or the plugin added it (--no-merge-callchains)."""
    sid_perf = need_sid_perf()
    root, ks, work = guest
    shutil.copy(guest.unpack(scenario, "per-task.data"), tmp_path / "in.data")
    shutil.copy(ks, tmp_path / "kallsyms")
    out = tmp_path / "out.txt"
    args = [sid_perf, "script", "-i", "in.data", "--kallsyms=./kallsyms", "--symfs=/symfs"]
    args += [] if merge else ["--no-merge-callchains"]
    p = subprocess.run(args + ["-s", str(ROOT / "perf_scripts" / "stitch.py"), "--", "-o", str(out)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "SID_BINDS": "%s:%s %s:/symfs" % (ROOT, ROOT, root)})
    assert p.returncode == 0, p.stderr[-2000:]
    theirs, mine = parse_script(out.read_text()), parse_script(ours(scenario, guest))
    jit = vdso = 0
    for key, (_h, frames) in theirs.items():
        mf = mine[key][1]
        for i, (ip, sym, dso) in enumerate(frames):
            if dso.startswith("/tmp/perf-") or dso.endswith(".dump"):
                jit += 1
                assert (ip, sym, dso) in mf, (key, (ip, sym, dso), mf)
            elif dso == "[vdso]":
                # perf here names [vdso] from its own process's image (this host's kernel, not
                # the guest's): where it leaves one [unknown], the plugin gives ours
                vdso += 1
                assert (ip, sym, dso) in mf, (key, (ip, sym, dso), mf)
    assert jit > 500 and vdso > 0


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("command", ["script", "folded"])
def test_engine_names_as_the_python_path(scenario, command, guest):
    """The C engine hands JIT frames to the same naming: byte for byte the Python path's."""
    root, ks, work = guest
    need_built("the C engine (deferstitch._accel)", bool(list((ROOT / "deferstitch").glob("_accel*.so"))))
    data = guest.unpack(scenario, "per-task.data")
    outs = [run_cli(command, data, "--symfs", root, "--kallsyms", ks,
                    env=dict(os.environ, DEFERSTITCH_ACCEL=a)) for a in ("0", "require")]
    assert all(r.returncode == 0 for r in outs), [r.stderr for r in outs]
    assert outs[0].stdout == outs[1].stdout
    assert b"py::" in outs[0].stdout or b"jit_pair" in outs[0].stdout


def test_stitch_no_report_leaves_the_feature_out(guest, tmp_path):
    """`stitch --no-report` writes no REPORT_FEATURE section (perf 7.2's perf inject dies on a
    feature bit it does not know); without it the report is there, and the frames are the same."""
    from deferstitch.output.stitched_file import REPORT_FEATURE
    from deferstitch.perfdata.reader import PerfData
    root, ks, work = guest
    data = guest.unpack("py_perf_jit", "per-task.data")
    outs = {}
    for opt in ((), ("--no-report",)):
        out = tmp_path / ("st%d.data" % len(opt))
        assert run_cli("stitch", data, "-o", out, "-q", *opt).returncode == 0
        outs[opt] = (REPORT_FEATURE in PerfData.open(str(out)).features,
                     run_cli("script", out, "--symfs", root, "--kallsyms", ks).stdout)
    assert outs[()][0] and not outs[("--no-report",)][0]
    assert outs[()][1] == outs[("--no-report",)][1] and b"(/tmp/jit-232.dump)" in outs[()][1]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_fleet_names_as_folded(scenario, guest, tmp_path):
    """`fleet` on a real capture gives `folded`'s lines, every name included: JIT (named in the
    task), [vdso] (the recorded kernel's image, found on the client), inlined calls, the rest."""
    pytest.importorskip("distributed", reason="Dask not installed: pip install 'deferstitch[fleet]'")
    root, ks, work = guest
    data = guest.unpack(scenario, "per-task.data")
    opts = ["-q", "--symfs", root, "--kallsyms", ks]
    single = run_cli("folded", data, *opts)
    assert single.returncode == 0, single.stderr
    out = tmp_path / "fleet.folded"
    r = run_cli("fleet", data, *opts, "--workers", "1", "-o", out)
    assert r.returncode == 0, r.stderr
    assert b"__vdso_" in single.stdout
    assert out.read_bytes() == single.stdout
