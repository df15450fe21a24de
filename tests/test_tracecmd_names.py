"""The trace side names user frames as the perf side does, through the same resolver: DWARF
inlined calls, debug files found by build id, perf maps of JIT code.

No released kernel writes ``user_unwind_stack`` (the series is not merged; the 7.2.13 guest of
the rig lacks ``userstacktrace_delay``), so the real stacks come from real perf captures of the
same programs (tests/data/langs: a C++ program with 1 269 inlined frames, Node.js with a
``/tmp/perf-PID.map``): each stitched sample's user stack, taken with the maps of the moment, is
written as the kernel series writes it (file offsets and inode_cache; anonymous memory, inode 0,
as its address) into a trace.dat (tests/tracecmd_synth.py), and ``deferstitch trace script``
must print every frame as ``deferstitch script`` names it on the perf.data (itself held to
perf 7.2's output by tests/test_lang_captures.py)."""
import os
import shutil
import subprocess
from argparse import Namespace

import pytest

from conftest import CAPTURES, DATA, run_cli
from guest_symfs import Guest
import tracecmd_synth as S

from deferstitch.output.sink import Sink
from deferstitch.perfdata.feed import PerfFeed
from deferstitch.perfdata.reader import PerfData
from deferstitch.pipeline import context
from deferstitch.symbols.elf import ElfFile
from deferstitch.symbols.maps import UNKNOWN
from deferstitch.symbols.perfmap import map_pid
from deferstitch.symbols.resolver import INLINED

LANGS = DATA / "langs"
ULONG_MAX = (1 << 64) - 1
WORKLOAD_A, WORKLOAD_B = CAPTURES / "bin" / "workload_a", CAPTURES / "bin" / "workload_b"


@pytest.fixture(scope="module")
def guest(tmp_path_factory):
    return Guest(LANGS, tmp_path_factory.mktemp("langs"))


class _Stacks(Sink):
    """Each stitched sample of the main threads: its comm, pid, user stack as the kernel
    series writes it ([(path, file offset)]; (None, address) in anonymous memory, (UNKNOWN,
    address) where no VMA covers it) and the perf side's names of each frame, with and without
    the calls inlined there, taken when it is resolved."""

    def __init__(self, ctx):
        self.ctx, self.samples = ctx, []

    def resolved(self, s):
        # a deferred stack carries no tgid: the trace side's pid is the tid, so only a main
        # thread's JIT frames can find their process's perf map
        if s.outcome != "stitched" or s.pid != s.tid or not s.user:
            return
        frames, named, plain = [], [], []
        for ip in s.user:
            m = self.ctx.maps.find(s.pid, ip)
            if m is None:
                frames.append((UNKNOWN, ip))
            elif map_pid(m.path) is not None or m.path.startswith("["):
                frames.append((None, ip))           # no file: inode 0, the address kept
            else:
                frames.append((m.path, m.file_offset(ip)))
            named.append(self.ctx.resolver.user_frames(s.pid, ip))
            plain.append([(ip,) + self.ctx.resolver.frame(s.pid, ip)])
        self.samples.append((self.ctx.comm(s), s.pid, frames, (named, plain)))


def perf_side(data, symfs, kallsyms):
    perf = PerfData.open(str(data))
    ctx = context(perf, Namespace(no_symbols=False, kallsyms=str(kallsyms), symfs=str(symfs),
                                  buildid_dir=None))       # deferstitch script's own
    out = _Stacks(ctx)
    PerfFeed(perf, out, observe=ctx.observe).run()
    return out.samples


def write_trace(samples, path):
    """The samples as a trace.dat: an event, its cookie, the inode_cache of new files, the
    stack; every file under one made-up (inode, dev) each (--symfs vouches for them)."""
    comms = {pid: comm for comm, pid, _f, _n in samples}
    td = S.TraceDat(1, [S.USER_UNWIND_COOKIE, S.USER_UNWIND_STACK], [S.GETPPID, S.INODE_CACHE], comms)
    inodes = {}
    t = S.T0
    for cookie, (_comm, pid, frames, _named) in enumerate(samples, 1):
        td.event(0, t, S.GETPPID, pid, __syscall_nr=110)
        td.event(0, t, S.USER_UNWIND_COOKIE, pid, cookie=cookie)
        keys = []
        for where, _off in frames:
            if where is None:
                keys.append(0)
            elif where == UNKNOWN:
                keys.append(ULONG_MAX)
            else:
                if where not in inodes:
                    inodes[where] = len(inodes) + 100
                    td.event(0, t + 1, S.INODE_CACHE, pid, inode=inodes[where], dev=1, path=where)
                keys.append(inodes[where])
        td.event(0, t + 2, S.USER_UNWIND_STACK, pid, cookie=cookie, stack=[off for _w, off in frames],
                 inodes=keys, dev=[1 if k not in (0, ULONG_MAX) else 0 for k in keys])
        t += 1000
    return td.write(path)


def frame_texts(frames):
    """(sym+0xoff, dso) of each frame; a symbol's start printed as the name alone, as the
    trace side prints it (perf script's +0x0)."""
    out = []
    for _ip, sym, off, dso in frames:
        out.append(("[unknown]" if sym is None else sym if not off else "%s+%#x" % (sym, off), dso))
    return out


def trace_blocks(text):
    """The (sym+0xoff, dso) frames of each sample of trace script's text, in order."""
    blocks = []
    for block in text.split("\n\n")[:-1]:
        frames = []
        for line in block.splitlines()[1:]:
            _num, rest = line.strip().split(" ", 1)
            sym, dso = rest.rsplit(" (", 1)
            frames.append((sym, dso[:-1]))
        blocks.append(frames)
    return blocks


@pytest.mark.parametrize("scenario", ["cpp", "node_perf_map"])
def test_trace_names_frames_as_the_perf_side(scenario, guest, tmp_path):
    root, kallsyms, _work = guest
    samples = perf_side(guest.unpack(scenario, "per-task.data"), root, kallsyms)
    assert len(samples) > 100
    trace = write_trace(samples, tmp_path / "trace.dat")
    for inline, which in ((), 0), (("--no-inline",), 1):
        r = run_cli("trace", "script", trace, "--symfs", root, "--max-stack", "4096", "-q", *inline)
        assert r.returncode == 0, r.stderr
        blocks = trace_blocks(r.stdout.decode())
        assert len(blocks) == len(samples)
        compared, kinds = 0, set()
        for (_comm, _pid, frames, names), got in zip(samples, blocks):
            want = []
            for (where, _off), f in zip(frames, names[which]):
                if where is None and f[0][3] == "[vdso]":
                    # the kernel's image, no file: the trace side has only [anon] and its address
                    want.append(("[unknown]", "[anon]"))
                    continue
                want += frame_texts(f)
                kinds.update(dso for _ip, sym, _o, dso in f if sym is not None)
            assert got == want
            compared += len(want)
        assert compared > 1000
        if scenario == "cpp":
            assert "/opt/rig/workload_cpp" in kinds
            assert (INLINED in kinds) == (not inline)   # DWARF's inlined calls were compared
        else:
            assert any(map_pid(d) is not None for d in kinds)   # perf map names were compared


def test_debug_file_found_by_build_id(tmp_path):
    """A stripped traced binary is named from its debug file in the build-id cache
    (``--buildid-dir``), found by the traced file's own build id; a file of another build
    put there is refused."""
    objcopy = shutil.which("objcopy")
    if objcopy is None:
        pytest.skip("objcopy (binutils) is not installed")
    elf = ElfFile(str(WORKLOAD_A))
    bid = elf.build_id()
    elf.m.close()
    assert bid
    exe = tmp_path / "bin" / "workload_a"
    exe.parent.mkdir()
    assert subprocess.run([objcopy, "--strip-all", str(WORKLOAD_A), str(exe)]).returncode == 0
    cache = tmp_path / "cache"
    debug = cache / ".build-id" / bid[:2] / bid[2:] / "debug"     # perf's BUILD_ID_CACHE_DEBUGINFO
    debug.parent.mkdir(parents=True)
    st = os.stat(exe)
    s_dev = (os.major(st.st_dev) << 20) | os.minor(st.st_dev)     # the kernel's encoding
    td = S.TraceDat(1, [S.USER_UNWIND_COOKIE, S.USER_UNWIND_STACK], [S.GETPPID, S.INODE_CACHE], S.COMMS)
    td.event(0, S.T0, S.GETPPID, S.W, __syscall_nr=110)
    td.event(0, S.T0, S.USER_UNWIND_COOKIE, S.W, cookie=S.C1)
    td.event(0, S.T0 + 5, S.INODE_CACHE, S.W, inode=st.st_ino, dev=s_dev, path=str(exe))
    td.event(0, S.T0 + 9, S.USER_UNWIND_STACK, S.W, cookie=S.C1, stack=[0x10d4], inodes=[st.st_ino],
             dev=[s_dev])
    path = td.write(tmp_path / "t.dat")
    named = "\t            10d4 main+0x4 (%s)" % exe

    def script():
        r = run_cli("trace", "script", path, "--buildid-dir", cache, "--no-inline")
        assert r.returncode == 0, r.stderr
        return r.stdout.decode().splitlines()
    assert named not in script()                        # stripped: no symbol of its own
    shutil.copy(WORKLOAD_B, debug)                      # another build's file at that place
    assert named not in script()
    shutil.copy(WORKLOAD_A, debug)
    assert named in script()
