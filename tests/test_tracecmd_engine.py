"""The C feed (_tracedat.Feed, tracecmd/engine.py) against the Python feed (reader.FtraceFeed,
the definition), both over our page reader: the same samples in the same order (every field),
the same stitched frames as they are resolved, the same report JSON and the same error, on
every trace.dat the tests have, damaged ones included, and on random streams that reach each
rule (nesting, migration, missed events, exits and forks, eviction, short records, variants).
The CLI's bytes on the same files: test_tracecmd_pages.py (libtracecmd's reading against ours)."""
import os
import random
import shutil
import subprocess
from collections import Counter

import pytest

import tracecmd_synth as S
from conftest import CAPTURES, DATA, SHARED, need_built, run_cli

from deferstitch.errors import DeferstitchError
from deferstitch.stitcher import DEFAULT_EXIT_GRACE, DEFAULT_MAX_PENDING


def engine_built():
    from deferstitch.tracecmd import pages
    need_built("the C feed (deferstitch._tracedat.Feed)",
               pages.available() and hasattr(pages._tracedat, "Feed"))


def _sample(s):
    return (s.tid, s.pid, s.cpu, s.time, s.kernel, s.cookie, s.comm, s.outcome, s.reason,
            s.user, s.after_stack, s.ref.system, s.ref.name)


def run(path, kind, max_pending=DEFAULT_MAX_PENDING, exit_grace=DEFAULT_EXIT_GRACE):
    """(error or None, report JSON, samples in the order handed on, stitched frames as resolved,
    inode_cache paths) of one feed over path."""
    from deferstitch.tracecmd import engine
    from deferstitch.tracecmd.bridge import Trace
    from deferstitch.tracecmd.reader import FtraceFeed
    try:
        trace = Trace(path)
    except DeferstitchError as err:
        return str(err), None, None, None, None
    with trace:
        samples, frames = [], []
        if kind == "python":
            def resolved(s):
                if s.outcome == "stitched":
                    frames.append(s.user)
            feed = FtraceFeed(sample=samples.append, resolved=resolved, max_pending=max_pending,
                              exit_grace=exit_grace, **trace.feed_args())
        else:
            assert engine.usable(trace), path
            feed = engine.EngineFeed(trace, samples.append, None, max_pending, exit_grace)
        err = None
        try:
            feed.run(trace)
        except DeferstitchError as e:
            err = str(e)
            feed.finish()
        if kind != "python":            # the stitched frames: report's mode, run again
            with Trace(path) as t2:
                f2 = engine.EngineFeed(t2, None, lambda fr, n: frames.extend([fr] * n),
                                       max_pending, exit_grace)
                try:
                    f2.run(t2)
                except DeferstitchError:
                    f2.finish()
                assert f2.report.to_json() == feed.report.to_json(), path
        return err, feed.report.to_json(), [_sample(s) for s in samples], frames, dict(feed.paths)


def same(path, **kw):
    py, c = run(path, "python", **kw), run(path, "engine", **kw)
    for name, a, b in zip(("error", "report", "samples", "stitched frames", "paths"), py, c):
        assert a == b, (path, name, a if not isinstance(a, list) else _first_diff(a, b))
    return py


def _first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i, x, y
    return "lengths", len(a), len(b)


def _usable(path):
    from deferstitch.tracecmd import engine
    from deferstitch.tracecmd.bridge import Trace
    try:
        with Trace(path) as t:
            return engine.usable(t)
    except DeferstitchError:
        return False


def test_the_engine_is_the_one_used(tmp_path, monkeypatch):
    """Files our page reader walks go to the C feed, -B instances too (else what follows
    compares the Python feed with itself); not with DEFERSTITCH_TRACE_FEED=python."""
    engine_built()
    from deferstitch.tracecmd import engine
    from deferstitch.tracecmd.bridge import Trace
    path = S.deferred(tmp_path / "d.dat")
    with Trace(path) as t:
        assert isinstance(engine.feed(t, sample=print), engine.EngineFeed)
    with Trace(S.instances(tmp_path / "i.dat")) as t:
        assert len(t.handles) == 3 and engine.usable(t)
    monkeypatch.setenv("DEFERSTITCH_TRACE_FEED", "python")
    with Trace(path) as t:
        assert not isinstance(engine.feed(t, sample=print), engine.EngineFeed)


def _damaged(path, out, seed):
    """path with bytes of its buffers' pages overwritten at random (test_tracecmd_pages' way)."""
    from deferstitch.tracecmd.bridge import Trace
    with Trace(path) as t:
        spans = [(first, size) for h in t.handles.values() for first, size in h.extents.values()
                 if size]
    rnd = random.Random(seed)
    data = bytearray(path.read_bytes())
    for _ in range(rnd.randint(1, 6)):
        first, size = rnd.choice(spans)
        at = first + rnd.randrange(size)
        data[at] = rnd.choice((0, 0xFF, rnd.randrange(256), data[at] ^ 1 << rnd.randrange(8)))
    out.write_bytes(bytes(data))
    return out


def test_same_as_the_python_feed_on_every_trace_dat(tmp_path, real_v6):
    """Every trace.dat of the tests the engine reads (the others are compressed, or have pages
    libtracecmd reads its own way), the synthetic ones damaged at random, and pages whose commit
    is past the page (the walk stops there)."""
    engine_built()
    carried = sorted(DATA.glob("*.dat")) + sorted((SHARED / "repro").glob("*.dat"))
    synth = [S.deferred(tmp_path / "d.dat"), S.deferred(tmp_path / "v.dat", variant=True),
             S.deferred(tmp_path / "a.dat", after=True), S.userstack(tmp_path / "u.dat"),
             S.missed_per_cpu(tmp_path / "m.dat"), S.instances(tmp_path / "i.dat"),
             S.big(tmp_path / "b.dat", 0.3)]
    damaged = [_damaged(synth[(0, 5, 6)[i % 3]], tmp_path / ("x%d.dat" % i), i) for i in range(36)]
    from deferstitch.tracecmd.bridge import Trace
    cut = []                        # a page in the middle whose commit says 5000 bytes
    for i, src in enumerate((synth[6], synth[5], synth[0], synth[4])):
        with Trace(src) as t:
            first, size = [e for h in t.handles.values() for e in h.extents.values() if e[1]][-1]
        data = bytearray(src.read_bytes())
        page = first + (size // S.PAGE // 2) * S.PAGE
        data[page + 8:page + 16] = (5000).to_bytes(8, "little")
        cut.append(tmp_path / ("commit%d.dat" % i))
        cut[-1].write_bytes(bytes(data))
    files = carried + synth + [real_v6] + damaged + cut
    used = [p for p in files if _usable(p)]
    assert len(used) >= 45 and real_v6 in used, [p.name for p in files if p not in used]
    outcomes, errors = Counter(), 0
    for path in used:
        err, rep, samples, _f, _p = same(path)
        errors += err is not None
        outcomes.update(s[8] or s[7] for s in samples)
    for path in synth[-2:]:
        same(path, max_pending=2)
        same(path, exit_grace=0)
    assert {"stitched", "passed", "deferred-lost-after-lost-records", "task-exited"} <= set(outcomes)
    assert errors >= 4, errors


def test_same_on_a_varied_trace(tmp_path):
    """tracecmd_synth.varied(): hundreds of tasks, losses, samples that wait to the end (so the
    C feed's report mode frees what resolved behind them, compact()), and 20 000 kernel stacks
    (past what the C feed keeps of them, KC_MAX: its table starts over)."""
    engine_built()
    path = S.varied(tmp_path / "v.dat", 3, nsyms=3000, kinds=20000, skew=0)
    err, rep, samples, frames, _p = same(path)
    assert err is None and len({s[4] for s in samples}) > 4096, len({s[4] for s in samples})
    import json
    rep = json.loads(rep) if isinstance(rep, str) else rep
    assert rep["unmatched"].get("stream-ended") and rep["samples"] > 2 * 4096, rep


def test_same_when_spilled(tmp_path, monkeypatch):
    """script and folded with the FIFO spilled to a file past 8 samples waiting (engine.SPILL_AT,
    16384 in use): the same samples in the same order as the Python feed, damage included."""
    engine_built()
    from deferstitch.tracecmd import engine
    monkeypatch.setattr(engine, "SPILL_AT", 8)
    files = [S.varied(tmp_path / "v.dat", 0.5, nsyms=500), S.big(tmp_path / "b.dat", 0.2),
             S.instances(tmp_path / "i.dat"), S.missed_per_cpu(tmp_path / "m.dat")]
    files += [_damaged(files[0], tmp_path / ("x%d.dat" % i), i) for i in range(4)]
    waited = 0
    for path in files:
        if _usable(path):
            err, rep, samples, _f, _p = same(path)
            waited += sum(s[8] == "stream-ended" for s in samples)
    assert waited, "no sample waited to the end: nothing was spilled behind one"


@pytest.fixture(scope="module")
def real_v6(tmp_path_factory):
    """The real capture (kernel 7.2, trace-cmd 3.4) as an uncompressed v6 file."""
    if shutil.which("trace-cmd") is None:
        pytest.skip("trace-cmd not installed: apt-get install trace-cmd")
    out = tmp_path_factory.mktemp("v6") / "real-v6.dat"
    subprocess.run(["trace-cmd", "convert", "-i", str(CAPTURES / "ftrace" / "trace-userstacktrace.dat"),
                    "-o", str(out), "--file-version", "6", "--compression", "none"],
                   check=True, capture_output=True)
    return out


# -- random streams -----------------------------------------------------------------------------
FORK = S._fmt("sched", "sched_process_fork", 301,
              [("char[16]", "parent_comm", 8, 16, 0), ("pid_t", "parent_pid", 24, 4, 1),
               ("char[16]", "child_comm", 28, 16, 0), ("pid_t", "child_pid", 44, 4, 1)],
              '"child_pid=%d", REC->child_pid')
SIGNED_COOKIE = S._fmt("ftrace", "user_unwind_cookie", 20, [("s64", "cookie", 8, 8, 1)],
                       '"cookie=%lld", REC->cookie')
TRACED = (S.READ, S.GETPPID, S.WORK)


def random_trace(path, seed):
    """A stream a kernel of the series could write, and then some: events nested by interrupts,
    tasks migrating, stacks lost in missed events or never written, duplicates and orphans,
    exits, forks reusing a tid, unknown inodes, records cut short (seed % 5 == 4: a field then
    lies past the record, which the Python reader reads its own way), variant formats."""
    rnd = random.Random(seed)
    variant, signed = seed % 7 == 3, seed % 7 == 5
    ftrace = [S.KERNEL_STACK, S.USER_STACK, SIGNED_COOKIE if signed else S.USER_UNWIND_COOKIE,
              S.USER_UNWIND_STACK_HASH if variant else S.USER_UNWIND_STACK]
    systems = [S.GETPPID, S.READ, S.EXIT, S.WORK, FORK,
               S.INODE_CACHE_HASH if variant else S.INODE_CACHE]
    ncpu = rnd.randint(1, 3)
    names = ("inst", "lossy")[:seed % 3]          # -B instances: each its own stitching
    td = S.TraceDat(ncpu, ftrace, systems, S.COMMS, names)
    buffers = [td.cpus] + [td.instances[n] for n in names]
    buf = [td.cpus]
    cut = seed % 5 == 4
    tasks = [100, 101, 102, 200, 300][:rnd.randint(2, 5)]
    entry = {t: rnd.randrange(1, 1 << 40) for t in tasks}
    where = {t: rnd.randrange(ncpu) for t in tasks}
    ts = [S.T0]
    files = [(1000 + i, 8 << 20 | i) for i in range(3)]

    def now():
        ts[0] += rnd.randint(1, 3000)
        return ts[0]

    def put(cpu, t, fmt, common_pid, **values):
        payload = S.pack_event(fmt, common_pid, values)
        if cut and rnd.random() < 0.08:
            payload = payload[:rnd.randrange(8, len(payload) + 1)]
        buf[0][cpu].add(t, payload)

    def companions(cpu, t, task, cookie=True):
        if rnd.random() < 0.9:
            k = [S.kaddr("ksys_read"), S.kaddr("do_syscall_64")][:rnd.randint(0, 2)]
            put(cpu, t, S.KERNEL_STACK, task, size=rnd.choice([len(k)] * 5 + [-1, 9]), caller=k)
        r = rnd.random()
        if cookie and r < 0.8:
            put(cpu, t, ftrace[2], task, cookie=entry[task])
        elif cookie and r < 0.9:
            put(cpu, t, S.USER_STACK, task, tgid=task, caller=[0x401000, 0x402000][:rnd.randint(0, 2)])

    for _ in range(rnd.randint(150, 500)):
        if rnd.random() < 0.2:
            buf[0] = rnd.choice(buffers)
        task = rnd.choice(tasks)
        cpu = where[task]
        r = rnd.random()
        if r < 0.45:
            t = now()
            fmt = rnd.choice(TRACED)
            put(cpu, t, fmt, task)
            if rnd.random() < 0.15:         # an interrupt's event before the companions
                other = rnd.choice(tasks)
                put(cpu, t, S.WORK, other)
                companions(cpu, t, other, cookie=rnd.random() < 0.5)
            companions(cpu, t, task)
        elif r < 0.65:                      # back to user space: the entry's stack
            t, c = now(), rnd.randrange(ncpu)
            if rnd.random() < 0.3:
                ino, dev = rnd.choice(files)
                if variant:
                    put(c, t, S.INODE_CACHE_HASH, task, hash=ino, path="/usr/lib/f%d.so" % ino)
                else:
                    put(c, t, S.INODE_CACHE, task, inode=ino, dev=dev, path="/usr/lib/f%d.so" % ino)
            n = rnd.randint(0, 4)
            keys = [rnd.choice([f[0] for f in files] + [0, S.ULONG_MAX, 77]) for _ in range(n)]
            stack = [rnd.randrange(0x1000, 0x90000) for _ in range(n)]
            if rnd.random() < 0.9:
                if variant:
                    put(c, t, ftrace[3], task, cookie=entry[task] % (1 << 64), stack=stack, hash=keys)
                else:
                    put(c, t, ftrace[3], task, cookie=entry[task] % (1 << 64), stack=stack, inodes=keys,
                        dev=[rnd.choice(files)[1] for _ in keys])
            if rnd.random() < 0.8:          # else a duplicate may follow
                entry[task] += 8
                if signed:                  # s64 cookies, some negative: the stack's u64 differs
                    entry[task] = (entry[task] + rnd.choice([0, 0, 1 << 63]) + (1 << 63)) % (1 << 64) - (1 << 63)
        elif r < 0.75:
            where[task] = rnd.randrange(ncpu)   # migrates (its open events stay behind)
        elif r < 0.82:
            buf[0][rnd.randrange(ncpu)].drop(now(), rnd.randint(1, 9))
        elif r < 0.88:
            t = now()
            put(cpu, t, S.EXIT, task, comm="x", pid=task, prio=120)
            companions(cpu, t, task)
        elif r < 0.92:
            t = now()
            put(cpu, t, FORK, task, parent_pid=task, child_pid=rnd.choice(tasks))
            companions(cpu, t, task)
        else:                               # a companion with no event before it
            companions(rnd.randrange(ncpu), now(), task)
    return td.write(path)


@pytest.mark.parametrize("seed", range(40))
def test_random_streams(tmp_path, seed):
    engine_built()
    path = random_trace(tmp_path / ("r%d.dat" % seed), seed)
    rnd = random.Random(seed)
    kw = {}
    if seed % 3 == 1:
        kw["max_pending"] = rnd.randint(1, 6)
    if seed % 4 == 2:
        kw["exit_grace"] = rnd.choice([0, 5000])
    err, rep, samples, frames, _paths = same(path, **kw)
    assert rep["samples"] == len(samples) and rep["conserved"]


def test_random_streams_reach_every_rule(tmp_path):
    """The streams above are worth comparing: over the seeds they stitch, pass, lose stacks
    with and without missed events, give up exited and evicted tasks, hit records cut short."""
    engine_built()
    seen, errors = Counter(), 0
    for seed in range(40):
        rnd = random.Random(seed)
        path = random_trace(tmp_path / ("r%d.dat" % seed), seed)
        kw = {"max_pending": rnd.randint(1, 6)} if seed % 3 == 1 else {}
        err, rep, samples, frames, _p = run(path, "python", **kw)
        errors += err is not None
        seen.update(s[8] or s[7] for s in samples)
        seen.update(k for k, n in rep["ftrace"]["ftrace_anomalies"].items() if n)
        seen["after-stack"] += sum(s[10] for s in samples)
        seen["orphan"] += rep["orphan_deferred"]
        seen["duplicate"] += rep["duplicate_deferred"]
    for what in ("stitched", "passed", "deferred-lost", "deferred-lost-after-lost-records",
                 "task-exited", "evicted", "stream-ended", "after-stack", "orphan", "duplicate",
                 "kernel_stack without its event", "inode not in inode_cache"):
        assert seen[what] > 0, (what, seen)
    assert errors > 0           # a record cut short before a field the feed needs


def test_kernel_stack_cut_before_its_callers(tmp_path):
    """A kernel_stack record that ends before its caller array: no kernel frames, on both
    readers and both feeds (it was a struct.error traceback on the Python feed)."""
    td = S.TraceDat(1, [S.KERNEL_STACK, S.USER_UNWIND_COOKIE], [S.GETPPID], S.COMMS)
    td.cpus[0].add(S.T0, S.pack_event(S.GETPPID, S.W, {}))
    td.cpus[0].add(S.T0, S.pack_event(S.KERNEL_STACK, S.W, {"size": 2, "caller": [1, 2]})[:12])
    path = td.write(tmp_path / "cut.dat")
    outs = []
    for env in ({}, {"DEFERSTITCH_TRACE_FEED": "python"}, {"DEFERSTITCH_ACCEL": "0"}):
        p = run_cli("trace", "script", path, env={**os.environ, **env})
        assert p.returncode == 0 and not p.stderr, (env, p.stderr)
        outs.append(p.stdout)
    assert outs[0] == outs[1] == outs[2] and b"sys_enter_getppid" in outs[0]


def test_a_feed_is_collected(tmp_path):
    """The C feed holds its EngineFeed's bound methods: run to the end or dropped midway (an
    exception out of the sink), the two and every sample the sink kept are collected."""
    import gc
    import weakref
    engine_built()
    from deferstitch.tracecmd import engine
    from deferstitch.tracecmd.bridge import Trace
    path = S.deferred(tmp_path / "d.dat")
    for finish in (True, False):
        with Trace(path) as t:
            out = []
            feed = engine.EngineFeed(t, out.append, None, DEFAULT_MAX_PENDING, DEFAULT_EXIT_GRACE)
            if finish:
                feed.run()
                assert out
            gone = weakref.ref(feed)
            del feed, out
        gc.collect()
        assert gone() is None, finish


def test_entries_before_a_stack_are_over(tmp_path):
    """A stack ends its task's earlier kernel entries (FtraceFeed._unwind_stack): a later event
    carrying an old entry's cookie is judged from its own time, not from that old entry's (whose
    span met a loss): deferred-lost, not after-lost-records, on both feeds."""
    engine_built()
    td = S.TraceDat(2, [S.KERNEL_STACK, S.USER_UNWIND_COOKIE, S.USER_UNWIND_STACK],
                    [S.READ, S.WORK, S.INODE_CACHE], S.COMMS)
    us = 1000

    def ev(cpu, t, cookie=None, pid=S.W):
        td.event(cpu, S.T0 + t * us, S.READ if cookie else S.WORK, pid)
        if cookie:
            td.event(cpu, S.T0 + t * us, S.USER_UNWIND_COOKIE, pid, cookie=cookie)

    def stack(t, cookie):
        td.event(0, S.T0 + t * us, S.USER_UNWIND_STACK, S.W, cookie=cookie, stack=[0x1139],
                 inodes=[0], dev=[0])
    ev(0, 10, cookie=0x100)             # entry C0, its stack never comes
    ev(1, 15, pid=S.KW)
    td.drop(1, S.T0 + 20 * us, 3)       # CPU 1 loses events between 15 and 20
    ev(1, 20, pid=S.KW)
    ev(0, 30, cookie=0x108)             # entry C1 and its stack: C0 is over
    stack(40, 0x108)
    ev(0, 50, cookie=0x100)             # C0's cookie again, after the loss
    ev(0, 55, cookie=0x110)
    stack(60, 0x110)
    path = td.write(tmp_path / "entries.dat")
    _err, rep, samples, _f, _p = same(path)
    reasons = {s[3]: s[8] for s in samples if s[5] is not None}
    assert reasons[S.T0 + 10 * us] == "deferred-lost-after-lost-records", reasons
    assert reasons[S.T0 + 50 * us] == "deferred-lost", reasons


def test_require_is_an_error_where_the_engine_cannot_run(tmp_path):
    """DEFERSTITCH_ACCEL=require on the trace side as on the perf side: the engine's bytes
    where it runs; where it cannot (the Python feed asked for, or --html's), one line naming
    why, exit 2, and no output written."""
    engine_built()
    path = S.deferred(tmp_path / "d.dat")
    require = {**os.environ, "DEFERSTITCH_ACCEL": "require"}
    base, req = run_cli("trace", "folded", path), run_cli("trace", "folded", path, env=require)
    assert base.returncode == req.returncode == 0 and req.stdout == base.stdout and base.stdout
    for args, env, why in (
            (["folded", path, "-o", tmp_path / "out"], {"DEFERSTITCH_TRACE_FEED": "python"},
             "DEFERSTITCH_TRACE_FEED=python"),
            (["report", path, "--html", tmp_path / "out"], {}, "a command it does not feed")):
        p = run_cli("trace", *args, env={**require, **env})
        lines = p.stderr.decode().splitlines()
        assert p.returncode == 2 and len(lines) == 1, (args, p.stderr)
        assert "DEFERSTITCH_ACCEL=require" in lines[0] and why in lines[0], lines
        assert not (tmp_path / "out").exists()
        assert run_cli("trace", *args, env={**os.environ, **env}).returncode == 0
        (tmp_path / "out").unlink()
