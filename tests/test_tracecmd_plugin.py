"""The trace-cmd report plugin (tracecmd_plugin/), built by its Makefile and loaded by the REAL
trace-cmd report: 3.1.6 here (libtraceevent 1.7.1, Python 3.11) and 3.4 in the sid rig
(libtraceevent 1.9.0, Python 3.14) — the same .so. It prints, under each user_unwind_stack,
the events that stack completed, exactly as ``deferstitch trace script`` names them, and the
unmatched summary at the end; every line trace-cmd prints without it is still there."""
import shutil
import subprocess
from collections import Counter

import pytest

from conftest import ROOT
from tracecmd_text import need_trace_cmd, plain_env, report, sid_report
import tracecmd_synth as S



@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory):
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.skip("no C compiler: apt-get install gcc")
    if not (shutil.os.path.exists("/usr/include/traceevent/event-parse.h")):
        pytest.skip("libtraceevent headers missing: apt-get install libtraceevent-dev")
    d = tmp_path_factory.mktemp("plugins")
    build = tmp_path_factory.mktemp("build")
    shutil.copy(ROOT / "tracecmd_plugin" / "plugin_deferstitch.c", build)
    shutil.copy(ROOT / "tracecmd_plugin" / "Makefile", build)
    p = subprocess.run(["make", "-s", "-C", str(build), "install", "PLUGIN_DIR=%s" % d,
                        "ROOT=%s" % ROOT], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return d


def split_plugin_lines(text):
    """(trace-cmd's own lines, our blocks {header line: frame lines}, our summary lines)."""
    own, blocks, summary, cur = [], {}, [], None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("deferstitch: "):
            summary = lines[i:]
            break
        if line.startswith("  stitched "):
            cur = blocks.setdefault(line[len("  stitched "):], [])
        elif cur is not None and line.startswith("\t") and "(" in line and not line.startswith("\t=>"):
            cur.append(line)
        else:
            cur = None
            own.append(line)
    return own, blocks, summary


def usecs(ts):
    """A time as trace-cmd and the plugin print it: rounded to microseconds."""
    us = (ts + 500) // 1000
    return "%d.%06d" % (us // 1000000, us % 1000000)


def expected_blocks(td):
    """What the plugin must print under the stacks, from the synthesizer's records (not from our
    reader): perf script's header and frames of each event stitched."""
    out = {}
    for ev in S.stitched(td):
        if ev.user is None:
            continue
        head = "%s %7d [%03d] %12s: %s:%s:" % (td.comms[ev.pid], ev.pid, ev.cpu, usecs(ev.ts),
                                                ev.fmt.system, ev.fmt.name)
        out[head] = (["\t%16x %s ([kernel.kallsyms])" % (a, S.kernel_name(a)) for a in ev.kernel]
                     + ["\t%16x [unknown] (%s)" % (ip, dso) for ip, dso in ev.user])
    return out


def check_summary(summary, td, unmatched):
    """The plugin's closing lines against the records: the counts, each unmatched event (time,
    pid, cookie), the missed events; ``unmatched`` the reasons the scenario is built to give."""
    traced = S.stitched(td)
    stitched = [e for e in traced if e.user is not None]
    lost = [e for e in traced if e.cookie is not None and e.user is None]
    assert summary[0] == "deferstitch: %d events: %d stitched (%d after their stack), %d passed, %d unmatched" % (
        len(traced), len(stitched), sum(e.after for e in stitched), sum(e.cookie is None for e in traced), len(lost))
    counts = dict(l.split(":") for l in summary if l.startswith("  unmatched "))
    assert {k[len("  unmatched "):]: int(v) for k, v in counts.items()} == unmatched
    events = sorted(l.strip().rsplit(": ", 1) for l in summary if l.startswith("      "))
    assert sorted(e for e, _reason in events) == sorted(          # (these times are cut, not rounded)
        "%d.%06d pid %d cookie %#x" % (e.ts // 10**9, e.ts % 10**9 // 1000, e.pid, e.cookie) for e in lost)
    assert sorted(r for _e, r in events) == sorted(r for r, n in unmatched.items() for _ in range(n))
    drops = td.drops
    assert "  missed events: %d times on a CPU, %d events counted" % (
        len(drops), sum(d[3] for d in drops)) in summary


OURS = ("user_unwind_stack:", "user_unwind_cookie:", "inode_cache:")


def without_deferred_events(lines):
    """trace-cmd's lines but those of the deferred events, which the plugin prints its own way
    (and the ``=>`` frames of a user_unwind_stack)."""
    out, skip = [], False
    for line in lines:
        if any(o in line for o in OURS):
            skip = "user_unwind_stack:" in line
            continue
        if skip and (line.startswith("{") or (line.startswith("=> ") and "(" not in line
                                              and line != "=> 0")):
            continue    # its arrays (trace-cmd 3.4's second line) or ours (=> path+0xoff)
        skip = False
        out.append(line)
    return out


def check(text, plain, td, after=False):
    own, blocks, summary = split_plugin_lines(text)
    assert without_deferred_events(own) == without_deferred_events(plain.splitlines())
    assert blocks == expected_blocks(td)
    check_summary(summary, td, S.EXPECT["unmatched"])
    assert text.count("\n  stitched ") == len(blocks)        # every stitched event printed once
    assert summary[0] == ("deferstitch: 9 events: 5 stitched (1 after their stack), 1 passed, 3 unmatched"
                          if after else
                          "deferstitch: 8 events: 4 stitched (0 after their stack), 1 passed, 3 unmatched")
    # the deferred events read like the kernel's own user_stack, never as byte arrays
    assert "FAILED TO PARSE" not in text and "ARRAY[" not in text
    lines = text.splitlines()
    i = next(i for i, l in enumerate(lines) if "user_unwind_stack:" in l and "0x500000001" in l)
    assert lines[i].endswith("cookie=0x500000001 <user stack trace>")
    assert lines[i + 1:i + 5] == ["=> /usr/bin/workload+0x1139", "=> /usr/lib/x86_64-linux-gnu/libc.so.6+0x27f4a",
                                  "=> [anon]+0x1ff0", "=> [unknown]+0x7ffd0000abcd"]
    assert any(l.endswith("inode_cache:          inode=11 dev=8:1 path=/usr/bin/workload") for l in lines)
    if after:       # the late event's stack right under its cookie
        j = next(j for j, l in enumerate(lines) if "5.004000: user_unwind_cookie:" in l)
        assert lines[j].endswith("cookie=0x500000001")
        assert lines[j + 1].startswith("  stitched workload     100 [001]     5.004000: syscalls:sys_enter_getppid:")


@pytest.mark.parametrize("after", [False, True])
def test_trace_cmd_3_1_report_prints_stitched_stacks(plugin_dir, tmp_path, after):
    need_trace_cmd()
    td = S.deferred(None, after=after, build=True)
    path = td.write(tmp_path / "trace.dat")
    text = report(path, env=plain_env(TRACEEVENT_PLUGIN_DIR=str(plugin_dir)))
    check(text, report(path), td, after)
    assert "deferstitch plugin:" not in text


@pytest.mark.parametrize("after", [False, True])
def test_trace_cmd_3_4_report_prints_stitched_stacks(plugin_dir, tmp_path, after):
    td = S.deferred(None, after=after, build=True)
    path = td.write(tmp_path / "trace.dat")
    local = tmp_path / "plugins"
    shutil.copytree(plugin_dir, local)           # inside the folder the rig binds
    text, err = sid_report(path, env=("HOME=/nonexistent", "TRACEEVENT_PLUGIN_DIR=%s" % local,
                                      "DEFERSTITCH_PATH=%s" % ROOT))
    plain, _err = sid_report(path, env=("HOME=/nonexistent",))
    assert "deferstitch plugin:" not in err, err
    check(text, plain, td, after)


def test_plugin_prints_the_stacks_of_every_buffer(plugin_dir, tmp_path):
    """A file with -B instances, through trace-cmd 3.1.6 and 3.4: each stitched event of every
    buffer printed once, under its own buffer's user_unwind_stack; a line per buffer at the end."""
    td = S.instances(None, build=True)
    path = td.write(tmp_path / "trace.dat")
    local = tmp_path / "plugins"
    shutil.copytree(plugin_dir, local)
    unmatched = Counter()
    for want in S.INSTANCES_EXPECT.values():
        unmatched.update(want["unmatched"])
    texts = [sid_report(path, env=("HOME=/nonexistent", "TRACEEVENT_PLUGIN_DIR=%s" % local,
                                   "DEFERSTITCH_PATH=%s" % ROOT))[0]]
    if shutil.which("trace-cmd"):
        texts.append(report(path, env=plain_env(TRACEEVENT_PLUGIN_DIR=str(plugin_dir))))
    for text in texts:
        _own, blocks, summary = split_plugin_lines(text)
        assert text.count("\n  stitched ") == len(blocks) == 8
        assert blocks == expected_blocks(td)
        check_summary(summary, td, dict(unmatched))
        assert summary[-3:] == ["  buffer top: 8 events: 4 stitched, 1 passed, 3 unmatched",
                                "  buffer inst: 8 events: 4 stitched, 1 passed, 3 unmatched",
                                "  buffer lossy: 1 events: 0 stitched, 0 passed, 1 unmatched"]
        lines = text.splitlines()       # inst's stack block follows inst's own stack line
        i = next(i for i, l in enumerate(lines) if l.startswith(" inst:") and "user_unwind_stack:" in l
                 and "0x500000001" in l)
        assert lines[i + 5].startswith("  stitched workload     100 [000]     5.050000: ")


def test_plugin_on_a_trace_without_deferred_stacks(plugin_dir):
    """The real -O userstacktrace capture: nothing to stitch, the summary says so, the report
    is otherwise untouched."""
    from test_tracecmd_bridge import real
    path = real()
    text = report(path, env=plain_env(TRACEEVENT_PLUGIN_DIR=str(plugin_dir)))
    own, blocks, summary = split_plugin_lines(text)
    assert blocks == {} and own == report(path).splitlines()
    assert summary == ["deferstitch: 29000 events: 0 stitched (0 after their stack), 29000 passed, 0 unmatched"]


def test_ts_offset_does_not_lose_the_blocks(plugin_dir, tmp_path):
    """The blocks are keyed by (cpu, record offset), not by time, so report options that adjust
    timestamps (--ts-offset, guest clock sync) cannot make them go missing."""
    need_trace_cmd()
    path = S.deferred(tmp_path / "trace.dat")
    text = report(path, "--ts-offset", "1000000000", env=plain_env(TRACEEVENT_PLUGIN_DIR=str(plugin_dir)))
    _own, blocks, summary = split_plugin_lines(text)
    assert len(blocks) == 4 and summary and "cookie=0x500000001 <user stack trace>" in text


def test_check_catches_a_wrong_stack_or_summary(plugin_dir, tmp_path):
    """The checks can fail: the plugin's text with a frame's dso or an unmatched event's pid
    changed is refused."""
    need_trace_cmd()
    td = S.deferred(None, build=True)
    path = td.write(tmp_path / "trace.dat")
    text = report(path, env=plain_env(TRACEEVENT_PLUGIN_DIR=str(plugin_dir)))
    plain = report(path)
    check(text, plain, td)
    for old, new in (("1ff0 [unknown] ([anon])", "1ff0 [unknown] ([heap])"),
                     ("pid 200 cookie", "pid 201 cookie")):
        assert old in text
        with pytest.raises(AssertionError):
            check(text.replace(old, new), plain, td)


def test_plugin_adds_no_crash_of_its_own(plugin_dir):
    """Wherever trace-cmd report -N reads a file (damaged ones of tests/data included), trace-cmd
    report with our plugin loaded reads it too (where trace-cmd itself dies, it dies either way)."""
    from conftest import DATA
    tool = need_trace_cmd()
    files, read = sorted(DATA.glob("*.dat")), []
    for path in files:
        plain = subprocess.run([tool, "report", "-N", "-i", str(path)], capture_output=True,
                               env=plain_env())
        if plain.returncode != 0:
            continue
        read.append(path)
        ours = subprocess.run([tool, "report", "-i", str(path)], capture_output=True,
                              env=plain_env(TRACEEVENT_PLUGIN_DIR=str(plugin_dir)))
        assert ours.returncode == 0, (path, ours.returncode, ours.stderr[-500:])
    # all but the pages trace-cmd itself dies on (test_tracecmd_damage.test_a_page_trace_cmd_itself_dies_on)
    dies = ("trace-segv-2.dat", "trace-segv-3.dat")
    assert read == [p for p in files if p.name not in dies] and len(read) >= 8, read
