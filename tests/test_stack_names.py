"""Named stacks are cached per process's maps (output/frames.py StackCache, Maps.signature):
processes whose maps are the same share them, and any difference in the maps, a later mmap over
a range, an exec or a pid reused after an exit names the stack anew. Checked on folded and pprof,
on the C engine and on the Python path, against names the test knows from the maps it wrote."""
import os
import struct

import pytest

from conftest import need_engine, run_cli
from google_pprof import read_profile
from synth import K, Synth
from deferstitch.abi import consts as C
from deferstitch.symbols.maps import Maps

IP = 0x401000                   # the user address every sample has
BASE, LENGTH = 0x400000, 0x10000


def mmap(f, pid, path, time, start=BASE):
    name = path.encode() + b"\0"
    name += b"\0" * (-len(name) % 8)
    f.raw(C.PERF_RECORD_MMAP, struct.pack("<iiQQQ", pid, pid, start, LENGTH, 0) + name
          + f.trailer(pid, time))


def comm_exec(f, pid, comm, time):
    name = comm.encode() + b"\0"
    name += b"\0" * (-len(name) % 8)
    f.raw(C.PERF_RECORD_COMM, struct.pack("<ii", pid, pid) + name + f.trailer(pid, time),
          misc=C.PERF_RECORD_MISC_COMM_EXEC)


def scenario(path):
    """[(pid, file named at IP)] in sample order, and the file. Pids 10..14 map libsame.so (the
    same maps: one signature); 20 maps libother.so at the same place; 10 then maps libnew.so
    over it; 30 maps liba.so, exits, and its pid comes back mapping libb.so; 40 maps libx.so,
    execs and maps liby.so."""
    f, t, want = Synth(), [1000], []

    def tick():
        t[0] += 10
        return t[0]

    def sample(pid, name):
        f.sample(pid, tick(), kernel=K, user=[IP, IP + 0x10])
        want.append((pid, name))
    for pid in range(10, 15):
        mmap(f, pid, "/opt/libsame.so", tick())
    mmap(f, 20, "/opt/libother.so", tick())
    for _ in range(3):
        for pid in (10, 11, 20, 12, 13, 14):
            sample(pid, "libsame.so" if pid != 20 else "libother.so")
    mmap(f, 10, "/opt/libnew.so", tick())
    sample(10, "libnew.so")
    sample(11, "libsame.so")
    mmap(f, 30, "/opt/liba.so", tick())
    sample(30, "liba.so")
    f.exit(30, tick())
    mmap(f, 30, "/opt/libb.so", tick())
    sample(30, "libb.so")
    mmap(f, 40, "/opt/libx.so", tick())
    sample(40, "libx.so")
    comm_exec(f, 40, "after-exec", tick())
    mmap(f, 40, "/opt/liby.so", tick())
    sample(40, "liby.so")
    f.round()
    return want, f.save(path)


def user_counts(folded):
    """Samples per user frame name of folded text (root first: the two user frames, then the
    kernel; both user frames must name the same map)."""
    got = {}
    for line in folded.splitlines():
        stack, n = line.rsplit(" ", 1)
        user = stack.split(";")[1:3]
        assert user[0] == user[1], line
        got[user[0]] = got.get(user[0], 0) + int(n)
    return got


def expected_counts(want):
    """What user_counts must give for the scenario's (pid, map name) samples."""
    expect = {}
    for _pid, name in want:
        expect["[%s]" % name] = expect.get("[%s]" % name, 0) + 1
    return expect


@pytest.mark.parametrize("accel", ["require", "0"])
def test_folded_names_follow_each_process_maps(tmp_path, accel):
    need_engine(accel)
    want, path = scenario(tmp_path / "maps.data")
    r = run_cli("folded", path, "--no-symbols", env={**os.environ, "DEFERSTITCH_ACCEL": accel})
    assert r.returncode == 0, r.stderr
    assert user_counts(r.stdout.decode()) == expected_counts(want)


@pytest.mark.parametrize("accel", ["require", "0"])
def test_pprof_locations_follow_each_process_maps(tmp_path, accel):
    need_engine(accel)
    want, path = scenario(tmp_path / "maps.data")
    out = tmp_path / "p.pb.gz"
    r = run_cli("export", path, "--format", "pprof", "--no-symbols", "-o", out,
                env={**os.environ, "DEFERSTITCH_ACCEL": accel})
    assert r.returncode == 0, r.stderr
    prof = read_profile(out)
    strings = prof.string_table
    fn = {f.id: strings[f.name] for f in prof.function}
    loc = {lc.id: fn[lc.line[0].function_id] for lc in prof.location}
    got = {}
    for smp in prof.sample:
        tid = [lab.num for lab in smp.label if strings[lab.key] == "tid"][0]
        user = {loc[i] for i in smp.location_id if not loc[i].startswith("[kernel")}
        assert len(user) == 1
        got.setdefault(tid, set()).update(user)
    expect = {}
    for pid, name in want:
        expect.setdefault(pid, set()).add("[%s]" % name)
    assert got == expect


def test_signature_is_the_maps_content():
    m = Maps()
    for pid in (1, 2):
        m.add(pid, BASE, LENGTH, 0, "/opt/libsame.so")
    m.add(3, BASE, LENGTH, 0, "/opt/libother.so")
    m.add(4, BASE, LENGTH, 0x1000, "/opt/libsame.so")       # another file offset
    assert m.signature(1) == m.signature(2)
    assert len({m.signature(p) for p in (1, 3, 4)}) == 3
    before = m.signature(2)
    m.add(2, BASE + LENGTH, LENGTH, 0, "/opt/libmore.so")
    assert m.signature(2) != before and m.signature(2) != m.signature(1)
    m.exit(1)
    assert m.signature(1) == m.signature(99)                # no maps: as a pid never seen


@pytest.mark.parametrize("accel", ["require", "0"])
def test_forgotten_signatures_never_mix_stacks(tmp_path, monkeypatch, accel):
    """With room for two map sets only, the signatures are forgotten again and again (sig_epoch):
    names still follow each process's own maps."""
    need_engine(accel)
    monkeypatch.setattr(Maps, "SIGNATURES", 2)
    from deferstitch import cli
    want, path = scenario(tmp_path / "maps.data")
    monkeypatch.setenv("DEFERSTITCH_ACCEL", accel)
    out = tmp_path / ("f-%s.txt" % accel)
    assert cli.main(["folded", str(path), "--no-symbols", "-o", str(out)]) == 0
    assert user_counts(out.read_text()) == expected_counts(want)


@pytest.mark.parametrize("accel", ["0", "1"], ids=["python", "engine"])
def test_a_sample_given_after_its_thread_exited_is_named_by_tid(tmp_path, accel):
    """perf forgets a thread at its EXIT (machine__process_exit_event) and gives the samples
    still waiting for their user stack at the end (session__flush_deferred_samples): those of a
    thread that exited are a new thread's, ":TID". A stitched one is given while it lives."""
    f = Synth()
    comm_exec(f, 60, "worker", 100)
    mmap(f, 60, "/usr/bin/worker", 110)
    f.sample(60, 200, cookie=1)
    f.deferred(60, 205, 1, [IP])
    f.sample(60, 300, cookie=2)             # its thread exits before returning to user space
    f.exit(60, 400)
    path = f.save(tmp_path / "exit.data")
    env = dict(os.environ, DEFERSTITCH_ACCEL=accel)
    heads = [ln.split()[0] for ln in run_cli("script", path, env=env).stdout.decode().splitlines()
             if ln and not ln.startswith("\t")]
    assert heads == ["worker", ":60"]
    folded = run_cli("folded", path, env=env).stdout.decode().splitlines()
    assert sorted(ln.split(";")[0] for ln in folded) == [":60", "worker"]


@pytest.mark.parametrize("accel", ["0", "1"], ids=["python", "engine"])
def test_a_kernel_address_in_the_user_half_is_unknown(tmp_path, accel):
    """A frame-pointer walk that read garbage can put an address of the kernel's range in the
    user stack: perf looks it up among the user maps (machine.c add_callchain_ip, after
    PERF_CONTEXT_USER), finds nothing and prints [unknown] ([unknown]); so do we, in every
    output (folded, and fleet's names, the same)."""
    garbage = 0xffffffff81000010
    f = Synth()
    comm_exec(f, 60, "worker", 100)
    mmap(f, 60, "/usr/bin/worker", 110)
    f.sample(60, 200, cookie=1)
    f.deferred(60, 205, 1, [IP, garbage, IP + 4])
    path = f.save(tmp_path / "garbage.data")
    env = dict(os.environ, DEFERSTITCH_ACCEL=accel)
    frames = [ln.split(None, 1) for ln in run_cli("script", path, env=env).stdout.decode().splitlines()
              if ln.startswith("\t")]
    assert ["%x" % garbage, "[unknown] ([unknown])"] in frames
    kernel = [fr for fr in frames if int(fr[0], 16) >= 0xffff800000000000 and int(fr[0], 16) != garbage]
    assert kernel and all("[kernel.kallsyms]" in fr[1] for fr in kernel)     # the kernel half stays
    folded = run_cli("folded", path, env=env).stdout.decode()
    assert ";[worker];[unknown];[worker];" in folded, folded
    pytest.importorskip("distributed", reason="Dask not installed: pip install 'deferstitch[fleet]'")
    out = tmp_path / "fleet.folded"
    assert run_cli("fleet", path, "-o", out, env=env).returncode == 0
    assert out.read_text() == folded
