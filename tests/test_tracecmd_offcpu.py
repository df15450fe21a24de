"""``deferstitch trace folded|flamegraph|report --off-cpu``: off-CPU time of a trace.dat from
sched:sched_switch events and their deferred user stacks (deferstitch/tracecmd/offcpu.py).

The scenario (two CPUs; A = pid 100 "workload", B = pid 200 "other"; ms after T0):

    cpu 0   0  switch A -> idle  (S, cookie CA1)         10  stack of B's CB1
                                                         12  switch B -> idle (R, cookie CB2)
                                                         13  stack of B's CB2
    cpu 1   3  switch B -> A     (D, cookie CB1)          5  stack of A's CA1
            6  switch A -> idle  (S, cookie CA2: its stack never written)
            8  switch idle -> A  (R: the idle task)
            9  getppid of A      (cookie CA3)             9.0001  stack of A's CA3

so A waits 3 ms (0 to 3: named as next_pid at 3, before its stack at 5) in its read, B waits
7 ms (3 to 10: its stack's time, no switch-in seen) in getppid, A waits 2 ms (6 to 8) with its
stack lost (a later entry's came: deferred-lost); B's 1 ms at 12 is a preemption (R), as is
the idle task's switch-out at 8: counted only with --preempted.
"""
import json
import os

import pytest

from conftest import run_cli
import tracecmd_synth as S

from deferstitch.errors import DeferstitchError
from deferstitch.output.folded import Folded
from deferstitch.tracecmd import engine
from deferstitch.tracecmd.bridge import Trace
from deferstitch.tracecmd.offcpu import TraceOffCpu
from deferstitch.tracecmd.outputs import Namer

MS, T0 = S.MS, S.T0
A, B = 100, 200
CA1, CA2, CA3 = (3 << 32) | 1, (5 << 32) | 2, (7 << 32) | 2
CB1, CB2 = (9 << 32) | 2, (11 << 32) | 1

# include/trace/events/sched.h's sched_switch as Linux 6.x tracefs shows it
_MASK = "((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)"
TABLE = ('{ 0x00000001, "S" }, { 0x00000002, "D" }, { 0x00000004, "T" }, { 0x00000008, "t" }, '
         '{ 0x00000010, "X" }, { 0x00000020, "Z" }, { 0x00000040, "P" }, { 0x00000080, "I" }')


def switch_format(table=TABLE):
    return S._fmt("sched", "sched_switch", 316,
                  [("char[16]", "prev_comm", 8, 16, 0), ("pid_t", "prev_pid", 24, 4, 1),
                   ("int", "prev_prio", 28, 4, 1), ("long", "prev_state", 32, 8, 1),
                   ("char[16]", "next_comm", 40, 16, 0), ("pid_t", "next_pid", 56, 4, 1),
                   ("int", "next_prio", 60, 4, 1)],
                  '"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s '
                  'next_pid=%d next_prio=%d", REC->prev_comm, REC->prev_pid, REC->prev_prio, '
                  '(REC->prev_state & ' + _MASK + ') ? __print_flags(REC->prev_state & ' + _MASK
                  + ', "|", ' + table + ') : "R", REC->prev_state & (((0x00000000 | 0x00000001 | '
                  '0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) '
                  '+ 1) << 1) ? "+" : "", REC->next_comm, REC->next_pid, REC->next_prio')


KS_A = [S.kaddr("ksys_read"), S.kaddr("do_syscall_64"), S.kaddr("entry_SYSCALL_64_after_hwframe")]
KS_B = [S.kaddr("do_syscall_64"), S.kaddr("entry_SYSCALL_64_after_hwframe")]
STACK_A = dict(stack=[0x1139, 0x27f4a], inodes=[S.EXE[0], S.LIBC[0]], dev=[S.EXE[1], S.LIBC[1]])
STACK_B = dict(stack=[0x27f4a], inodes=[S.LIBC[0]], dev=[S.LIBC[1]])
COMMS = {A: "workload", B: "other"}


def scenario(path, switch=None, b_next=A):
    """The module docstring's trace.dat at ``path``; ``b_next`` the next_pid of B's switch at
    3 ms (A: it names A running again)."""
    sw = switch or switch_format()
    td = S.TraceDat(2, [S.KERNEL_STACK, S.USER_STACK, S.USER_UNWIND_COOKIE, S.USER_UNWIND_STACK],
                    [S.GETPPID, sw, S.INODE_CACHE], COMMS)

    def switch(cpu, ts, prev, state, nxt, cookie, kstack):
        td.event(cpu, ts, sw, prev, prev_comm=COMMS.get(prev, "swapper/%d" % cpu), prev_pid=prev,
                 prev_prio=120, prev_state=state, next_comm=COMMS.get(nxt, "swapper/%d" % cpu),
                 next_pid=nxt, next_prio=120)
        if kstack:
            td.event(cpu, ts, S.KERNEL_STACK, prev, size=len(kstack), caller=kstack)
        if cookie is not None:
            td.event(cpu, ts, S.USER_UNWIND_COOKIE, prev, cookie=cookie)

    def stack(cpu, ts, pid, cookie, frames):
        td.event(cpu, ts, S.USER_UNWIND_STACK, pid, cookie=cookie, **frames)

    # cpu 0
    switch(0, T0, A, 1, 0, CA1, KS_A)
    stack(0, T0 + 10 * MS, B, CB1, STACK_B)
    switch(0, T0 + 12 * MS, B, 0, 0, CB2, KS_B)
    stack(0, T0 + 13 * MS, B, CB2, STACK_B)
    # cpu 1
    switch(1, T0 + 3 * MS, B, 2, b_next, CB1, KS_B)
    for (inode, dev), p in S.PATHS.items():
        td.event(1, T0 + 5 * MS, S.INODE_CACHE, A, inode=inode, dev=dev, path=p)
    stack(1, T0 + 5 * MS, A, CA1, STACK_A)
    switch(1, T0 + 6 * MS, A, 1, 0, CA2, KS_A)
    switch(1, T0 + 8 * MS, 0, 0, A, None, None)
    td.event(1, T0 + 9 * MS, S.GETPPID, A, __syscall_nr=110)
    td.event(1, T0 + 9 * MS, S.KERNEL_STACK, A, size=len(KS_B), caller=KS_B)
    td.event(1, T0 + 9 * MS, S.USER_UNWIND_COOKIE, A, cookie=CA3)
    stack(1, T0 + 9 * MS + 100, A, CA3, STACK_A)
    return td.write(path)


@pytest.fixture
def dat(tmp_path):
    return str(scenario(tmp_path / "offcpu.dat"))


# the stacks as folded names them (no symbols here: files by name, kernel by kallsyms)
A_READ = "workload;[libc.so.6];[workload];entry_SYSCALL_64_after_hwframe;do_syscall_64;ksys_read"
B_PPID = "other;[libc.so.6];entry_SYSCALL_64_after_hwframe;do_syscall_64"
A_LOST = ("workload;[user stack lost: deferred-lost];entry_SYSCALL_64_after_hwframe;"
          "do_syscall_64;ksys_read")


def folded(path, *more, env=None):
    p = run_cli("trace", "folded", path, "--off-cpu", *more, env=env)
    assert p.returncode == 0, p.stderr.decode()
    return dict(line.rsplit(" ", 1) for line in p.stdout.decode().splitlines())


def test_folded_ns_per_stack(dat):
    """Each wait's stack weighted by its ns: A's 3 ms ended by the switch that names it as
    next_pid (before its stack at 5 ms), B's 7 ms by its stack's time, A's lost 2 ms."""
    got = folded(dat)
    assert {k: int(v) for k, v in got.items()} == {A_READ: 3 * MS, B_PPID: 7 * MS, A_LOST: 2 * MS}


def test_next_pid_ends_before_stack_time(dat, tmp_path):
    """A's first wait ends at B's switch naming it as next_pid (3 ms), before its stack's time
    (5 ms); the same file with next_pid 0 there lasts to the stack's time."""
    assert int(folded(dat)[A_READ]) == 3 * MS
    rep = json.loads(run_cli("trace", "report", dat, "--off-cpu", "--json").stdout)["off_cpu"]
    assert rep["ended"] == {"next-pid": 2, "user-stack": 1}
    assert rep["ns_by_ending"] == {"next-pid": 5 * MS, "user-stack": 7 * MS}
    other = str(scenario(tmp_path / "idle.dat", b_next=0))
    assert int(folded(other)[A_READ]) == 5 * MS
    rep = json.loads(run_cli("trace", "report", other, "--off-cpu", "--json").stdout)["off_cpu"]
    assert rep["ended"] == {"next-pid": 1, "user-stack": 2}


def test_preempted_only_with_the_option(dat):
    """prev_state R (B at 12 ms, the idle task at 8 ms) is a preemption: skipped, unless
    --preempted (B's 1 ms to its stack; the idle task never seen again: never ended)."""
    plain = folded(dat)
    assert not any(int(v) == 1 * MS for v in plain.values())
    both = folded(dat, "--preempted")
    assert int(both[B_PPID]) == 8 * MS                  # 7 ms waiting + 1 ms preempted
    rep = json.loads(run_cli("trace", "report", dat, "--off-cpu", "--preempted", "--json").stdout)
    waits = rep["off_cpu"]
    assert waits["preempted_not_counted"] == 0
    assert waits["never_ended"] == {"recording-ended": 1}     # the idle task's
    states = {t["tid"]: t["ns_by_state"] for t in waits["threads"]}
    assert states[B] == {"D": 7 * MS, "R": 1 * MS}


def test_unstitched_wait_keeps_its_reason(dat):
    """A's second wait: its stack never came (a later entry's did): its time is under the lost
    frame of the reason the report counts, not under a guessed stack."""
    rep = json.loads(run_cli("trace", "report", dat, "--off-cpu", "--json").stdout)
    assert rep["unmatched"] == {"deferred-lost": 1}
    assert int(folded(dat)[A_LOST]) == 2 * MS


def test_report_counts_add_up(dat):
    p = run_cli("trace", "report", dat, "--off-cpu", "--json")
    assert p.returncode == 0, p.stderr.decode()
    w = json.loads(p.stdout)["off_cpu"]
    assert w["switch_outs"] == 5
    assert w["preempted_not_counted"] == 2
    assert w["switch_outs"] == (sum(w["ended"].values()) + sum(w["never_ended"].values())
                                + w["preempted_not_counted"])
    threads = {t["tid"]: t for t in w["threads"]}
    assert threads[A]["ns_by_state"] == {"S": 5 * MS} and threads[A]["waits"] == {"next-pid": 2}
    assert threads[B]["ns_by_state"] == {"D": 7 * MS} and threads[B]["waits"] == {"user-stack": 1}
    assert threads[A]["on_cpu_samples"] == 1            # its getppid
    text = run_cli("trace", "report", dat, "--off-cpu").stdout.decode()
    assert "off-CPU time: waits from each switch-out" in text
    assert "COUNTS DO NOT ADD UP" not in text
    waits = text[text.index("off-CPU time:"):].splitlines()
    row = next(line.split() for line in waits if line.startswith("workload"))
    assert row[:5] == ["workload", str(A), "5.000", "0.000", "5.000"]     # off-CPU, D, S ms


def test_state_letters_from_the_files_table(tmp_path):
    """The letters are the format's own table: one that calls 0x02 "U" names B's state so (a
    fixed table would say D)."""
    table = TABLE.replace('"D"', '"U"')
    path = str(scenario(tmp_path / "u.dat", switch_format(table)))
    w = json.loads(run_cli("trace", "report", path, "--off-cpu", "--json").stdout)["off_cpu"]
    assert {t["tid"]: t["ns_by_state"] for t in w["threads"]}[B] == {"U": 7 * MS}


def test_flamegraph_off_cpu(dat, tmp_path):
    out = tmp_path / "g.html"
    p = run_cli("trace", "flamegraph", dat, "--off-cpu", "-o", out)
    assert p.returncode == 0, p.stderr.decode()
    page = out.read_text()
    assert "Off-CPU Time Flame Graph: %s" % dat in page
    assert "[off-cpu]" not in page and 'data-kind="wait-user"' in page
    assert 'data-unit="ns"' in page and "7.00 ms" in page


def test_no_sched_switch_one_line_exit_2(tmp_path):
    path = str(S.deferred(tmp_path / "plain.dat"))
    for cmd in ("folded", "report", "flamegraph"):
        out = tmp_path / ("x." + cmd)
        p = run_cli("trace", cmd, path, "--off-cpu", *(("-o", out) if cmd != "report" else ()))
        err = p.stderr.decode()
        assert p.returncode == 2, (cmd, err)
        assert err.count("\n") == 1 and path in err and "sched_switch" in err, err
        assert p.stdout == b"" and not out.exists()
    with Trace(path) as trace, pytest.raises(DeferstitchError):
        TraceOffCpu(None, trace)


def test_both_paths_same_bytes(dat, tmp_path):
    """DEFERSTITCH_ACCEL=0 (walk.py and the Python feed) and the default (the C walker under the
    Python feed: --off-cpu reads each sample's record) give the same bytes."""
    outs = {}
    for accel in ("0", None):
        env = dict(os.environ)
        env.pop("DEFERSTITCH_ACCEL", None)
        if accel is not None:
            env["DEFERSTITCH_ACCEL"] = accel
        got = []
        for args in (("folded", dat, "--off-cpu"), ("folded", dat, "--off-cpu", "--preempted"),
                     ("report", dat, "--off-cpu"), ("report", dat, "--off-cpu", "--json"),
                     ("flamegraph", dat, "--off-cpu", "-o", "-")):
            p = run_cli("trace", *args, env=env)
            assert p.returncode == 0, p.stderr.decode()
            got.append(p.stdout)
        outs[accel] = got
    assert outs["0"] == outs[None]


def test_in_process_feed(dat):
    """The adapter over the feed in-process: what the CLI's folded gives."""
    import io
    f = io.StringIO()
    with Trace(dat) as trace:
        namer = Namer(trace)
        out = TraceOffCpu(Folded(f, None, "ns", namer=namer), trace)
        feed = engine.feed(trace, sample=out.named, python=True)
        namer.recorded = feed.paths
        feed.run(trace)
        out.close()
    assert dict(line.rsplit(" ", 1) for line in f.getvalue().splitlines()) == folded(dat)


def test_preempted_goes_with_off_cpu(dat):
    p = run_cli("trace", "folded", dat, "--preempted")
    assert p.returncode == 2 and b"--off-cpu" in p.stderr and p.stdout == b""
    p = run_cli("trace", "script", dat, "--off-cpu")
    assert p.returncode == 2 and b"not an option of trace script" in p.stderr


def test_report_html_and_off_cpu(dat, tmp_path):
    """--html beside --off-cpu: the page written, the off-CPU tables printed as without it."""
    page = tmp_path / "r.html"
    p = run_cli("trace", "report", dat, "--off-cpu", "--html", page)
    assert p.returncode == 0, p.stderr.decode()
    assert page.exists()
    assert p.stdout == run_cli("trace", "report", dat, "--off-cpu").stdout
