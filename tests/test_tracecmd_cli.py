"""``deferstitch trace``: report (tables, --json, --fail-on-unmatched), script and folded, run as
users run them (a subprocess), on our v6 files and on the real capture; bad input is one line."""
import json
import os
import shutil

import pytest

from conftest import CAPTURES, run_cli
import tracecmd_synth as S

REAL = CAPTURES / "ftrace" / "trace-userstacktrace.dat"
WORKLOAD_A = CAPTURES / "bin" / "workload_a"


@pytest.fixture
def deferred(tmp_path):
    return S.deferred(tmp_path / "trace.dat")


def test_report_json_and_tables(deferred):
    p = run_cli("trace", "report", deferred, "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["conserved"] and {k: d[k] for k in S.EXPECT} == S.EXPECT
    assert d["ftrace"]["events"]["ftrace:user_unwind_stack"] == 2
    p = run_cli("trace", deferred)                      # FILE alone = report
    text = p.stdout.decode()
    assert p.returncode == 0 and "unmatched: deferred-lost-after-lost-records" in text
    assert "unmatched: task-exited" in text and "COUNTS DO NOT ADD UP" not in text
    assert run_cli("trace", deferred, "report", "--fail-on-unmatched").returncode == 1


def test_script_and_folded(deferred):
    p = run_cli("trace", "script", deferred)
    assert p.returncode == 0, p.stderr
    blocks = p.stdout.decode().split("\n\n")[:-1]
    assert len(blocks) == S.EXPECT["samples"]
    heads = [b.splitlines()[0] for b in blocks]
    assert heads[0] == "workload     100 [000]     5.000000: syscalls:sys_enter_read: "
    assert heads[3] == "workload     100 [001]     5.002001: syscalls:sys_enter_read: "
    first = blocks[0].splitlines()[1:]
    assert first == ["\tffffffff81200010 ksys_read ([kernel.kallsyms])",
                     "\tffffffff81100010 do_syscall_64 ([kernel.kallsyms])",
                     "\tffffffff81100410 entry_SYSCALL_64_after_hwframe ([kernel.kallsyms])",
                     "\t            1139 [unknown] (/usr/bin/workload)",
                     "\t           27f4a [unknown] (/usr/lib/x86_64-linux-gnu/libc.so.6)",
                     "\t            1ff0 [unknown] ([anon])",
                     "\t    7ffd0000abcd [unknown] ([unknown])"]
    assert "[user stack lost: deferred-lost-after-lost-records]" in blocks[4]
    p = run_cli("trace", "folded", deferred)
    lines = p.stdout.decode().splitlines()
    assert lines == sorted(lines) and sum(int(l.rsplit(" ", 1)[1]) for l in lines) == 8
    assert ("workload;0x7ffd0000abcd;[anon];[libc.so.6];[workload];entry_SYSCALL_64_after_hwframe;"
            "do_syscall_64;ksys_read 3") in lines


def test_user_frames_named_through_the_elf_file(tmp_path):
    """path + file offset -> symbol, through --symfs (the real workload_a of the captures:
    main at vaddr 0x10d0 = file offset 0x10d0 in its second PT_LOAD)."""
    symfs = tmp_path / "symfs"
    (symfs / "opt" / "rig").mkdir(parents=True)
    shutil.copy(WORKLOAD_A, symfs / "opt" / "rig" / "workload_a")
    td = S.TraceDat(1, [S.USER_UNWIND_COOKIE, S.USER_UNWIND_STACK], [S.GETPPID, S.INODE_CACHE], S.COMMS)
    td.event(0, S.T0, S.GETPPID, S.W, __syscall_nr=110)
    td.event(0, S.T0, S.USER_UNWIND_COOKIE, S.W, cookie=S.C1)
    td.event(0, S.T0 + 5, S.INODE_CACHE, S.W, inode=5, dev=1, path="/opt/rig/workload_a")
    td.event(0, S.T0 + 9, S.USER_UNWIND_STACK, S.W, cookie=S.C1, stack=[0x10d4], inodes=[5], dev=[1])
    path = td.write(tmp_path / "sym.dat")
    out = run_cli("trace", "script", path, "--symfs", symfs).stdout.decode()
    assert "\t            10d4 main+0x4 (/opt/rig/workload_a)" in out.splitlines()
    out = run_cli("trace", "folded", path, "--symfs", symfs).stdout.decode()
    assert out == "workload;main 1\n"


def test_real_capture_outputs():
    d = json.loads(run_cli("trace", "report", REAL, "--json").stdout)
    assert (d["samples"], d["passed"], d["conserved"]) == (29000, 29000, True)
    assert d["ftrace"]["events"] == {"ftrace:user_stack": 29000, "syscalls:sys_enter_getppid": 29000}
    folded = run_cli("trace", "folded", REAL).stdout.decode().splitlines()
    assert sum(int(l.rsplit(" ", 1)[1]) for l in folded) == 29000
    assert all(l.startswith("workload_a;") for l in folded)


def test_bad_input_one_line_exit_2(tmp_path):
    bad = tmp_path / "bad.dat"
    bad.write_bytes(b"\0" * 100)
    for args in (("trace", "report", bad), ("trace", "script", tmp_path / "none.dat")):
        p = run_cli(*args)
        err = p.stderr.decode()
        assert p.returncode == 2 and err.count("\n") == 1 and err.startswith("deferstitch: "), err


def test_user_frames_named_only_from_the_traced_file(tmp_path):
    """A user frame is named from the file at its path here only when that file has the
    (inode, dev) inode_cache recorded; another file there (say, another build of libc) leaves
    it unnamed, and the report counts why. --symfs is the user vouching for a file."""
    exe = tmp_path / "bin" / "workload_a"
    exe.parent.mkdir()
    shutil.copy(WORKLOAD_A, exe)
    st = os.stat(exe)
    s_dev = (os.major(st.st_dev) << 20) | os.minor(st.st_dev)     # the kernel's encoding

    def trace(inode, name):
        td = S.TraceDat(1, [S.USER_UNWIND_COOKIE, S.USER_UNWIND_STACK], [S.GETPPID, S.INODE_CACHE], S.COMMS)
        td.event(0, S.T0, S.GETPPID, S.W, __syscall_nr=110)
        td.event(0, S.T0, S.USER_UNWIND_COOKIE, S.W, cookie=S.C1)
        td.event(0, S.T0 + 5, S.INODE_CACHE, S.W, inode=inode, dev=s_dev, path=str(exe))
        td.event(0, S.T0 + 9, S.USER_UNWIND_STACK, S.W, cookie=S.C1, stack=[0x10d4], inodes=[inode],
                 dev=[s_dev])
        return td.write(tmp_path / name)
    same, other = trace(st.st_ino, "same.dat"), trace(st.st_ino + 1, "other.dat")
    named = "\t            10d4 main+0x4 (%s)" % exe
    assert named in run_cli("trace", "script", same).stdout.decode().splitlines()
    out = run_cli("trace", "script", other).stdout.decode().splitlines()
    assert named not in out and "\t            10d4 [unknown] (%s)" % exe in out
    rep = json.loads(run_cli("trace", "report", other, "--json").stdout)
    assert rep["ftrace"]["unnamed_user_frames"] == {
        "another file at that path (inode or dev differ from the traced one)": 1}
    assert json.loads(run_cli("trace", "report", same, "--json").stdout)["ftrace"]["unnamed_user_frames"] == {}
    symfs = tmp_path / "symfs"
    (symfs / str(exe.parent).lstrip("/")).mkdir(parents=True)
    shutil.copy(WORKLOAD_A, symfs / str(exe).lstrip("/"))
    assert named in run_cli("trace", "script", other, "--symfs", symfs).stdout.decode().splitlines()
    text = run_cli("trace", "report", other).stdout.decode()
    assert "user frames left unnamed (printed as path+0xoffset): 1" in text
