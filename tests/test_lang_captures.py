"""Frame for frame against perf 7.2 on real captures of C++, Rust (legacy and v0 mangling), Go,
Node.js and Java programs (tests/data/langs, its README says how they were made): `deferstitch
script --symfs DIR --kallsyms FILE --max-stack 1024` names every frame as perf's `perf script`
did in the guest: demangled names, DWARF inlined frames (Go's compressed sections too), perf maps,
the comm of a thread that exited.

What may differ, and only so: a sample perf left unmerged (its stack was written before it: ours
is stitched); a frame perf leaves `[unknown]` that the jitdump names (perf names it so only after
`perf inject --jit`: ours must be the dump's own name there); a sample whose deferred stack holds
a stray context value (perf then discards the whole callchain, machine.c add_callchain_ip; we drop
the value and keep the frames, and the report counts it)."""
import lzma

import pytest

from conftest import DATA, run_cli
from guest_symfs import Guest
from jit_synth import loads
from perf_text import compare_frames, parse_script

LANGS = DATA / "langs"
KERNEL = 0xffff800000000000
SCENARIOS = ["cpp", "rust_legacy", "rust_v0", "go", "node_perf_map", "node_jitdump", "java"]
DUMPS = {"node_jitdump": "/out/node_jitdump/jit-372.dump"}      # where V8 wrote it in the guest


@pytest.fixture(scope="module")
def guest(tmp_path_factory):
    """The guest's symfs, kallsyms and a work dir, from tests/data/langs."""
    return Guest(LANGS, tmp_path_factory.mktemp("langs"), DUMPS)


def ours(scenario, guest, *extra):
    root, ks, work = guest
    data = guest.unpack(scenario, "per-task.data")
    r = run_cli("script", data, "--symfs", root, "--kallsyms", ks, "--max-stack", "1024", "-q", *extra)
    assert r.returncode == 0, r.stderr
    return r.stdout.decode()


def dump_name_at(scenario, ip, guest):
    """sym+0xoff the scenario's dump gives ip, read by the test itself (the last code loaded
    there), or None."""
    if scenario not in DUMPS:
        return None
    hit = None
    for addr, size, name in loads(guest.unpack(scenario, DUMPS[scenario].rsplit("/", 1)[1])):
        if addr <= ip < addr + size:
            hit = "%s+%#x" % (name, ip - addr)
    return hit


def compare(scenario, guest):
    """(Counter of differences by kind, the first few, frames compared, frames perf named)."""
    perf = lzma.decompress((LANGS / scenario / "script.txt.xz").read_bytes()).decode()
    theirs, mine = parse_script(perf, inlined=True), parse_script(ours(scenario, guest), inlined=True)
    assert theirs.keys() == mine.keys(), "samples differ"

    def kind(p, o):
        if p[1] == "[unknown]" and o[0] == p[0] and o[2] == DUMPS.get(scenario) \
                and o[1] == dump_name_at(scenario, p[0], guest):
            return "named-by-dump"              # perf without perf inject --jit: [unknown]
        return "inlined" if "inlined" in (p[2], o[2]) else "vdso" if p[2] == "[vdso]" else "name"
    bad, first, frames, _ = compare_frames(theirs, mine, kind, excused=("named-by-dump",), comm=True)
    return bad, first, frames


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_names_as_perf_72(scenario, guest):
    bad, first, frames = compare(scenario, guest)
    assert frames > 10000
    strict = {k: n for k, n in bad.items()
              if k not in ("perf-left-unmerged", "named-by-dump", "perf-discarded-chain")}
    assert not strict, (strict, first)
    assert bad["perf-discarded-chain"] <= 1
    if scenario == "node_jitdump":
        assert bad["named-by-dump"] > 5000      # V8's builtins and JIT code, by the dump


def user_share(text):
    """(named, all) user frames of a perf script text."""
    named = total = 0
    for _h, frames in parse_script(text, inlined=True).values():
        for ip, sym, _dso in frames:
            if ip < KERNEL:
                total += 1
                named += sym != "[unknown]"
    return named, total


def test_v8_frames_named_at_least_as_perf_inject_jit_does(guest):
    """On the deferred --perf-prof capture perf names about a fifth of the user frames; after
    perf inject --jit (only possible on a run recorded without defer: inject drops every
    deferred stack) a half. Ours on the deferred file: at least that half."""
    perf_deferred = user_share(lzma.decompress((LANGS / "node_jitdump" / "script.txt.xz").read_bytes()).decode())
    injected = user_share(lzma.decompress(
        (LANGS / "node_jitdump_inject" / "script-fields-injected.txt.xz").read_bytes()).decode())
    mine = user_share(ours("node_jitdump", guest))
    share = [n / t for n, t in (perf_deferred, injected, mine)]
    assert share[0] < 0.3 and share[1] > 0.45, share
    assert share[2] >= share[1], share


@pytest.mark.parametrize("scenario", ["cpp", "rust_v0"])
def test_no_demangle_gives_the_binary_names(scenario, guest):
    text = ours(scenario, guest, "--no-demangle")
    assert ("_ZN11deferstitch" if scenario == "cpp" else "_RNv") in text
    assert "deferstitch::" not in text and "workload_rust::" not in text
