"""The C reader of the ring-buffer pages (deferstitch/_tracedat.c, tracecmd/pages.py) against
walk.py's (DEFERSTITCH_ACCEL=0, the definition): the same bytes out of ``deferstitch trace``
on every trace.dat the tests have, damaged ones included, and on pages damaged on purpose.

Run as users run it (subprocesses): a crash is a signal here, not a dead test run."""
import os
import random
import struct
import subprocess

import pytest

import tracecmd_synth as S
from conftest import CAPTURES, DATA, SHARED, need_built, run_cli
from page_damage import damaged, each_check, pages

REAL = CAPTURES / "ftrace" / "trace-userstacktrace.dat"
SLOW = {**os.environ, "DEFERSTITCH_ACCEL": "0"}


def walker_built():
    from deferstitch.tracecmd import pages
    need_built("the page reader (deferstitch._tracedat)", pages.available())


def both(path, command, *options):
    """(libtracecmd's run, ours): each exits 0 or 2 with one line, and they say the same."""
    args = (command, path) + options
    slow = run_cli("trace", *args, env=SLOW)
    fast = run_cli("trace", *args)
    for p in (slow, fast):
        assert p.returncode in (0, 2), (path, args, p.returncode, p.stderr[-2000:])
        if p.returncode == 2:
            lines = p.stderr.decode().splitlines()       # warnings, then the one line
            assert lines and all(l.startswith("deferstitch: ") for l in lines), p.stderr
            assert all(": warning: " in l for l in lines[:-1]), p.stderr
    assert (fast.returncode, fast.stderr) == (slow.returncode, slow.stderr), (path, args)
    assert fast.stdout == slow.stdout, (path, args)
    return fast


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    d = tmp_path_factory.mktemp("synth")
    return {"deferred": S.deferred(d / "deferred.dat"),
            "variant": S.deferred(d / "variant.dat", variant=True),
            "after": S.deferred(d / "after.dat", after=True),
            "userstack": S.userstack(d / "userstack.dat"),
            "instances": S.instances(d / "instances.dat"),
            "missed": S.missed_per_cpu(d / "missed.dat"),
            "big": S.big(d / "big.dat", 0.3)}


@pytest.fixture(scope="module")
def real_v6(tmp_path_factory):
    """The real capture (kernel 7.2, trace-cmd 3.4) as an uncompressed v6 file: real pages."""
    if subprocess.run(["which", "trace-cmd"], capture_output=True).returncode:
        pytest.skip("trace-cmd not installed: apt-get install trace-cmd")
    out = tmp_path_factory.mktemp("v6") / "real-v6.dat"
    subprocess.run(["trace-cmd", "convert", "-i", str(REAL), "-o", str(out), "--file-version", "6",
                    "--compression", "none"], check=True, capture_output=True)
    return out


def test_our_reader_is_the_one_used(synth, real_v6):
    """On uncompressed files the records come from our walker, not libtracecmd (else the tests
    below would compare libtracecmd with itself)."""
    walker_built()
    from deferstitch.tracecmd.bridge import Trace
    for path in (synth["deferred"], synth["instances"], real_v6):
        with Trace(path) as t:
            assert all(h._walk is not None for h in t.handles.values()), path
    with Trace(synth["deferred"]) as t:
        n = sum(1 for _ in t)
    assert n > 20


def test_same_bytes_on_every_trace_dat(synth, real_v6):
    walker_built()
    carried = sorted(DATA.glob("*.dat")) + sorted((SHARED / "repro").glob("*.dat"))
    assert len(carried) >= 18, carried        # the repros of tests/data and tests/data/real/repro
    files = carried + list(synth.values()) + [real_v6, REAL]
    files += sorted((DATA / "tracecmd-v7").glob("*-zstd.dat"))     # compressed: our chunks
    for path in files:
        both(path, "report", "--json")
        both(path, "script")
        both(path, "folded")


def test_damaged_pages_one_line_the_same_from_both(synth, tmp_path):
    """Each check of the walker, hit once: a commit larger than the page, an event longer than
    the commit, an event header cut by the commit, a padding event pointing backwards, a stored
    missed-events count past the page, a record shorter than its common fields; and the file cut
    in the middle of a CPU's pages. Both readers stop at the same record with the same line."""
    walker_built()
    path = synth["big"]
    cpu0 = [off for cpu, off in pages(path) if cpu == 0]
    page = cpu0[len(cpu0) // 2]
    commit = struct.unpack_from("<Q", path.read_bytes(), page + 8)[0] & ((1 << 27) - 1)
    assert commit > 100
    for name, (change, words) in each_check(page).items():
        bad = damaged(path, tmp_path, name, change)
        p = both(bad, "report", "--json")
        err = p.stderr.decode()
        assert p.returncode == 2 and words in err, (name, err)
        assert ("offset %#x" % page)[:-3] in err and "damaged ring-buffer page" in err, (name, err)
        assert '"complete": false' in p.stdout.decode(), name
    # cut inside a CPU's pages (libtracecmd 3.1.6 dies opening it)
    bad = damaged(path, tmp_path, "cut", lambda d: d.__delitem__(slice(page + 100, None)))
    p = both(bad, "report", "--json")
    assert p.returncode == 2 and b"truncated" in p.stderr, p.stderr


def test_random_damage_to_pages_both_readers_agree(synth, tmp_path):
    """Bytes of the CPU data overwritten at random (a fixed seed): never a crash or a traceback,
    and our reader says what libtracecmd's way says, byte for byte."""
    walker_built()
    path = synth["deferred"]
    offsets = [off for _cpu, off in pages(path)]
    rnd = random.Random(25)
    for i in range(30):
        page = rnd.choice(offsets)

        def change(d):
            for _ in range(rnd.randint(1, 4)):
                at = page + rnd.randrange(0, 256 if rnd.random() < 0.7 else 4096)
                d[at] = rnd.choice((0, 0xFF, rnd.randrange(256), d[at] ^ 1 << rnd.randrange(8)))
        both(damaged(path, tmp_path, "random-%d" % i, change), "report", "--json")


def test_equal_times_go_out_lower_cpu_first(tmp_path, monkeypatch):
    """Records of the same time on several CPUs: the lower CPU's first, as
    tracecmd_peek_next_data picks them (a strict <), from both readers."""
    walker_built()
    from deferstitch.tracecmd.bridge import Trace
    from deferstitch.tracecmd.pages import is_c_walker
    td = S.TraceDat(3, [S.USER_UNWIND_COOKIE], [S.GETPPID], S.COMMS)
    for i in range(12):
        for cpu in (2, 0, 1):
            td.event(cpu, S.T0 + (i // 3) * S.MS, S.GETPPID, S.W, __syscall_nr=110)
    path = td.write(tmp_path / "ties.dat")
    seqs = []
    for mode in ("0", "1"):
        monkeypatch.setenv("DEFERSTITCH_ACCEL", mode)
        with Trace(path) as t:
            assert is_c_walker(t.handles["top"]._walk) == (mode == "1")
            seqs.append([(ev.ts, ev.cpu, ev.offset) for ev in t])
    assert seqs[0] == seqs[1]
    assert [cpu for _ts, cpu, _off in seqs[0][:9]] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
