"""Read what ``trace-cmd report`` prints back into events, to compare our bridge with it.

    comm-pid [cpu] [flags] secs.usecs: name: info        one event (3.4 adds a latency flags column;
                                                         with -R it prints [cpu]-0xFLAGS)
    <continuation lines>                                 its info, continued (stacks, arrays)
    CPU:N [K EVENTS DROPPED]  /  CPU:N [EVENTS DROPPED]  missed events before the next event of N
"""
import ctypes
import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT, need_rig

HEAD = re.compile(r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\](?:-0x[0-9a-f]+)?\s+(?:[^\s]{4,6}\s+)?"
                  r"(?P<secs>\d+)\.(?P<usecs>\d{6}): (?P<name>[\w]+):\s*(?P<info>.*)$")
DROPPED = re.compile(r"^CPU:(?P<cpu>\d+) \[(?:(?P<n>\d+) )?EVENTS DROPPED\]$")
RAW_FIELD = re.compile(r"(\w+)=(ARRAY\[[^\]]*\]|\S*)")


class TextEvent:
    __slots__ = ("comm", "pid", "cpu", "usecs", "name", "info", "more", "dropped")

    def __init__(self, m, dropped):
        self.comm, self.pid, self.cpu = m["comm"], int(m["pid"]), int(m["cpu"])
        self.usecs = int(m["secs"]) * 1000000 + int(m["usecs"])
        self.name, self.info, self.more, self.dropped = m["name"], m["info"], [], dropped

    def raw_fields(self):
        """{name: text} of a ``report -R`` line."""
        return dict(RAW_FIELD.findall(self.info))


def parse(text):
    """TextEvents in print order; ``dropped`` = None, or the count (-1 unknown) announced before."""
    events, dropped = [], {}
    for line in text.splitlines():
        if line.startswith("cpus=") or not line:
            continue
        m = DROPPED.match(line)
        if m:
            dropped[int(m["cpu"])] = int(m["n"]) if m["n"] else -1
            continue
        m = HEAD.match(line)
        if m:
            cpu = int(m["cpu"])
            events.append(TextEvent(m, dropped.pop(cpu, None)))
        elif events:
            events[-1].more.append(line)
        else:
            raise AssertionError("unexpected report line: %r" % line)
    return events


def split_buffers(text, instances):
    """{buffer: its lines} of a report of a file with instances: trace-cmd prefixes an instance's
    lines with its name, right-aligned (``" inst: "``), the top buffer's with as many blanks; a
    dropped-events notice of an instance carries the prefix, the event after it does not."""
    width = max(len(n) for n in instances) + 2
    out = {"top": [], **{n: [] for n in instances}}
    last, carry = "top", None
    for line in text.splitlines():
        if line.startswith("cpus=") or not line:
            continue
        prefix = line[:width].strip()
        name = prefix[:-1] if prefix.endswith(":") and prefix[:-1] in instances else None
        body = line[width:] if name else line
        if DROPPED.match(body.strip()):
            carry = name or "top"
            out[carry].append(body.strip())
        elif HEAD.match(body):
            last = name or carry or "top"
            carry = None
            out[last].append(body)
        else:                                   # a continuation line of the last event
            out[last].append(line)
    return {k: "\n".join(v) + "\n" for k, v in out.items()}


def need_trace_cmd():
    tool = shutil.which("trace-cmd")
    if tool is None:
        pytest.skip("trace-cmd not installed: apt-get install trace-cmd")
    return tool


def need_libtracecmd():
    """libtraceevent's version, e.g. (1, 7, 1), as the dynamic loader finds libtracecmd and
    libtraceevent by themselves (not through our bridge, so that an error of ours cannot turn
    into a skip); a skip naming the package when one is missing."""
    for soname, package in (("libtracecmd.so.1", "libtracecmd1"), ("libtraceevent.so.1", "libtraceevent1")):
        try:
            ctypes.CDLL(soname)
        except OSError:
            pytest.skip("%s not found: apt-get install %s" % (soname, package))
    with open("/proc/self/maps") as maps:       # the file the soname's link led to
        for line in maps:
            m = re.search(r"/libtraceevent\.so\.(\d+)\.(\d+)\.(\d+)$", line.rstrip())
            if m:
                return tuple(int(x) for x in m.groups())
    raise AssertionError("libtraceevent.so.1 is loaded but not under a versioned name")


def plain_env(**extra):
    """An environment where trace-cmd loads the system plugins only (not a plugin installed in
    ~/.local by ``make plugin``), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k != "TRACEEVENT_PLUGIN_DIR"}
    env["HOME"] = "/nonexistent"
    env.update(extra)
    return env


def report(path, *args, env=None):
    """trace-cmd report (the host's, 3.1.6 on bookworm) of path, as text."""
    tool = need_trace_cmd()
    p = subprocess.run([tool, "report", "-i", str(path), *args], capture_output=True, text=True,
                       env=env or plain_env())
    assert p.returncode == 0, p.stderr
    return p.stdout


def need_sid_run():
    return need_rig("sid-run", "sid")


def sid_report(path, *args, env=()):
    """trace-cmd 3.4 (Debian sid, in the rig's chroot) report of path, run from its folder."""
    tool = need_sid_run()
    cmd = [tool, "env", *env, "trace-cmd", "report", "-i", "./" + path.name, *args]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=path.parent,
                       env=dict(os.environ, SID_BINDS="%s:%s" % (ROOT, ROOT)))
    if p.returncode != 0 and "trace-cmd" in p.stderr and "not found" in p.stderr:
        pytest.skip("trace-cmd missing in the sid chroot: %s" % p.stderr.strip())
    assert p.returncode == 0, p.stderr
    return p.stdout, p.stderr
