"""ftrace events through the shared core: our v6 files (validated by the real trace-cmd report
first) and the real ``-O userstacktrace`` capture. The outcomes follow the cookie rules of
the perf side: one cookie for every event of one kernel entry, a lost stack never replaced by
a later one, exits, missed events counted."""
import pytest

from conftest import CAPTURES
from tracecmd_text import parse, report, sid_report
import tracecmd_synth as S

from deferstitch.model import PASSED, STITCHED, UNMATCHED
from deferstitch.tracecmd.bridge import Trace
from deferstitch.tracecmd.reader import FtraceFeed

REAL = CAPTURES / "ftrace" / "trace-userstacktrace.dat"


def feed(path):
    out = []
    with Trace(path) as trace:
        rep = FtraceFeed(sample=out.append, long_size=trace.long_size).run(trace)
    return rep, out


def by_key(samples):
    return {(s.tid, s.time, s.ref.name): s for s in samples}


@pytest.fixture(params=["inodes", "hash"])
def deferred_file(request, tmp_path):
    return S.deferred(tmp_path / "deferred.dat", variant=request.param == "hash")


def test_real_trace_cmd_reads_our_v6_file(deferred_file):
    """Both trace-cmd versions print every event, the missed events, and (3.4, libtraceevent
    1.9 knows __print_dynamic_array) the stack arrays through the v6 print fmt."""
    events = parse(report(deferred_file))
    names = [e.name for e in events]
    assert names.count("user_unwind_stack") == 2 and names.count("user_unwind_cookie") == 7
    assert [e.dropped for e in events if e.dropped] == [3]
    text, _err = sid_report(deferred_file)
    events = parse(text)
    stack = next(e for e in events if e.name == "user_unwind_stack")
    assert stack.info == "cookie=%d" % S.C1
    assert stack.more[0].startswith("{0x1139,0x27f4a,0x1ff0,0x7ffd0000abcd}")
    assert "CPU:0 [3 EVENTS DROPPED]" in text


def test_deferred_outcomes(deferred_file):
    rep, out = feed(deferred_file)
    assert rep.conserved()
    got = {k: getattr(rep, k) for k in ("samples", "stitched", "passed", "deferred_records",
                                        "lost_records", "lost_events")}
    got["unmatched"] = dict(rep.unmatched)
    assert got == S.EXPECT
    assert [s.time for s in out] == sorted(s.time for s in out)       # handed on in time order
    s = by_key(out)
    frames = [("/usr/bin/workload", 0x1139), ("/usr/lib/x86_64-linux-gnu/libc.so.6", 0x27f4a),
              ("[anon]", 0x1ff0), ("[unknown]", 0x7ffd0000abcd)]
    # one cookie, three events of pid 100, one of them on the other CPU after a migration
    w = [v for k, v in s.items() if k[0] == S.W]
    assert len(w) == 3 and {x.cpu for x in w} == {0, 1}
    for x in w:
        assert x.outcome == STITCHED and x.cookie == S.C1 and list(x.user) == frames
        assert x.kernel[0] == S.kaddr("ksys_read")
    kw = s[(S.KW, S.T0 + 2 * S.MS, "workqueue_execute_start")]
    assert kw.outcome == PASSED and kw.cookie is None and kw.user is None
    assert len(kw.kernel) == 2
    # pid 200: C2's stack lost with the missed events; C3 is not glued under C2's kernel stack
    lost = s[(S.O, S.T0 + 3 * S.MS, "sys_enter_getppid")]
    assert lost.outcome == UNMATCHED and lost.reason == "deferred-lost-after-lost-records"
    ok = s[(S.O, S.T0 + 7 * S.MS, "sys_enter_getppid")]
    assert ok.outcome == STITCHED and ok.cookie == S.C3 and [p for p, _o in ok.user][0] == "/usr/bin/workload"
    # pid 101 exits before returning to user space: both its events, the exit one too
    t = [v for k, v in s.items() if k[0] == S.T]
    assert [(x.ref.name, x.reason) for x in t] == [("sys_enter_read", "task-exited"),
                                                    ("sched_process_exit", "task-exited")]
    assert rep.extra["ftrace_anomalies"] == {}


def test_missing_inode_names_and_no_inodes(tmp_path):
    """A stack whose inodes are not in the cache keeps inode and device in the frame name; a
    stack event without inodes/dev arrays keeps the raw offsets."""
    fmt = S._fmt("ftrace", "user_unwind_stack", 21,
                 [("u64", "cookie", 8, 8, 0), ("__data_loc unsigned long[]", "stack", 16, 4, 0)],
                 '"cookie=%lld", REC->cookie')
    td = S.TraceDat(1, [S.KERNEL_STACK, S.USER_UNWIND_COOKIE, fmt], [S.GETPPID], S.COMMS)
    td.event(0, S.T0, S.GETPPID, S.W, __syscall_nr=110)
    td.event(0, S.T0, S.USER_UNWIND_COOKIE, S.W, cookie=S.C1)
    td.event(0, S.T0 + 10, fmt, S.W, cookie=S.C1, stack=[0x10, 0x20])
    path = td.write(tmp_path / "noinodes.dat")
    assert len(parse(report(path))) == 3
    rep, out = feed(path)
    assert out[0].outcome == STITCHED and list(out[0].user) == [("[unknown]", 0x10), ("[unknown]", 0x20)]

    td = S.TraceDat(1, [S.USER_UNWIND_COOKIE, S.USER_UNWIND_STACK], [S.GETPPID], S.COMMS)
    td.event(0, S.T0, S.GETPPID, S.W, __syscall_nr=110)
    td.event(0, S.T0, S.USER_UNWIND_COOKIE, S.W, cookie=S.C1)
    td.event(0, S.T0 + 10, S.USER_UNWIND_STACK, S.W, cookie=S.C1, stack=[0x10], inodes=[77],
             dev=[(259 << 20) | 3])
    rep, out = feed(td.write(tmp_path / "nocache.dat"))
    assert list(out[0].user) == [("[inode 77 dev 259:3]", 0x10)]
    assert rep.extra["ftrace_anomalies"] == {"inode not in inode_cache": 1}


def test_synchronous_user_stack_pairs_like_a_cookie(tmp_path):
    rep, out = feed(S.userstack(tmp_path / "us.dat"))
    assert rep.conserved() and rep.samples == 4 and rep.passed == 4
    users = [s.user for s in out]
    assert users[:3] == [((None, 0x7f0000001000 + i), (None, 0x555500001139)) for i in range(3)]
    assert users[3] is None               # the kworker: no user stack
    assert [s.cpu for s in out] == [0, 1, 0, 0]


def test_real_userstacktrace_capture():
    rep, out = feed(REAL)
    assert rep.conserved() and rep.samples == 29000 and rep.passed == 29000
    assert rep.extra["ftrace_anomalies"] == {}
    with Trace(REAL) as trace:
        stacks = [e["caller"] for e in trace if e.name == "user_stack"]
    assert [[a for _p, a in s.user] for s in out] == [[a for a in c if a] for c in stacks]
    assert all(s.ref.name == "sys_enter_getppid" and s.comm == "workload_a" for s in out)


def test_interrupt_event_between_an_event_and_its_companions(tmp_path):
    """E1, E2 (in an interrupt of the same task), kernel_stack(E2), cookie(E2), kernel_stack(E1),
    cookie(E1): each event gets its own kernel stack; both wait for the same cookie."""
    td = S.TraceDat(1, [S.KERNEL_STACK, S.USER_UNWIND_COOKIE, S.USER_UNWIND_STACK],
                    [S.READ, S.WORK], S.COMMS)
    ks1 = [S.kaddr("ksys_read"), S.kaddr("do_syscall_64")]
    ks2 = [S.kaddr("process_one_work")]
    td.event(0, S.T0, S.READ, S.W, fd=3, count=1)
    td.event(0, S.T0 + 100, S.WORK, S.W, work=1, function=S.kaddr("ksys_read", 0))
    td.event(0, S.T0 + 110, S.KERNEL_STACK, S.W, size=1, caller=ks2)
    td.event(0, S.T0 + 120, S.USER_UNWIND_COOKIE, S.W, cookie=S.C1)
    td.event(0, S.T0 + 200, S.KERNEL_STACK, S.W, size=2, caller=ks1)
    td.event(0, S.T0 + 210, S.USER_UNWIND_COOKIE, S.W, cookie=S.C1)
    td.event(0, S.T0 + 900, S.USER_UNWIND_STACK, S.W, cookie=S.C1, stack=[0x1139], inodes=[0], dev=[0])
    path = td.write(tmp_path / "nested.dat")
    assert [e.name for e in parse(report(path))] == [
        "sys_enter_read", "workqueue_execute_start", "kernel_stack", "user_unwind_cookie",
        "kernel_stack", "user_unwind_cookie", "user_unwind_stack"]
    rep, out = feed(path)
    assert [(s.ref.name, list(s.kernel), s.outcome) for s in out] == [
        ("sys_enter_read", ks1, STITCHED), ("workqueue_execute_start", ks2, STITCHED)]
    assert rep.extra["ftrace_anomalies"] == {}


def test_events_without_user_part_still_come_out(tmp_path):
    """Kernel stacks only (no user option): every event becomes a sample, passed, in order."""
    td = S.TraceDat(1, [S.KERNEL_STACK], [S.GETPPID], S.COMMS)
    for i in range(10):
        td.event(0, S.T0 + i, S.GETPPID, S.W + i % 2, __syscall_nr=110)
        td.event(0, S.T0 + i, S.KERNEL_STACK, S.W + i % 2, size=1, caller=[S.kaddr("do_syscall_64", i)])
    rep, out = feed(td.write(tmp_path / "k.dat"))
    assert rep.passed == 10 and [s.kernel[0] for s in out] == [S.kaddr("do_syscall_64", i) for i in range(10)]


def test_event_after_its_stack_and_a_repeated_stack(tmp_path):
    """An event in the unwinder's own task work (after user_unwind_stack, same cookie) is its
    entry's: stitched after its stack; the same stack written again serves nothing twice."""
    td = S.TraceDat(1, [S.USER_UNWIND_COOKIE, S.USER_UNWIND_STACK], [S.GETPPID], S.COMMS)
    stack = dict(cookie=S.C1, stack=[0x1139], inodes=[0], dev=[0])
    td.event(0, S.T0, S.GETPPID, S.W, __syscall_nr=110)
    td.event(0, S.T0, S.USER_UNWIND_COOKIE, S.W, cookie=S.C1)
    td.event(0, S.T0 + 10, S.USER_UNWIND_STACK, S.W, **stack)
    td.event(0, S.T0 + 20, S.GETPPID, S.W, __syscall_nr=110)
    td.event(0, S.T0 + 20, S.USER_UNWIND_COOKIE, S.W, cookie=S.C1)
    td.event(0, S.T0 + 30, S.USER_UNWIND_STACK, S.W, **stack)
    rep, out = feed(td.write(tmp_path / "after.dat"))
    assert [(s.outcome, s.after_stack) for s in out] == [(STITCHED, False), (STITCHED, True)]
    assert (rep.stitched_after_stack, rep.duplicate_deferred, rep.orphan_deferred) == (1, 1, 0)
