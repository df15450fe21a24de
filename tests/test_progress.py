"""The progress line: on a terminal, for long runs, from the engine and the Python path alike.

    deferstitch: 4.2 MB read (70 %), 26546 records, 25186 samples, 83121 samples/s

stderr is a real pseudo-terminal here; DEFERSTITCH_PROGRESS_DELAY=0 makes every run "long", so
no test depends on how fast this machine is.
"""
import os
import pty
import subprocess
import sys

import pytest

from conftest import ROOT, capture, run_cli


def on_a_terminal(argv, stdin, **env):
    """(rc, stdout, what the terminal on stderr got) of one CLI run."""
    master, slave = pty.openpty()
    try:
        p = subprocess.run([sys.executable, "-m", "deferstitch", *map(str, argv)], stdin=stdin,
                           stdout=subprocess.PIPE, stderr=slave, cwd=ROOT, env=dict(os.environ, **env))
    finally:
        os.close(slave)
    got = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:             # EIO: the terminal's other end is closed
            break
        if not chunk:
            break
        got += chunk
    os.close(master)
    return p.returncode, p.stdout, got


@pytest.mark.parametrize("accel", ["1", "0"])
@pytest.mark.parametrize("source", ["file", "pipe"])
def test_progress_line_on_a_terminal(accel, source):
    path, _ = capture("c_per_task" if source == "file" else "pipe")     # file mode, pipe format
    argv = ["folded", str(path) if source == "file" else "-", "--no-symbols"]
    with open(path, "rb") as f:
        if source == "pipe":
            p = subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE)
            stdin = p.stdout
        else:
            stdin = subprocess.DEVNULL
        rc, out, term = on_a_terminal(argv, stdin, DEFERSTITCH_PROGRESS_DELAY="0", DEFERSTITCH_ACCEL=accel)
        if source == "pipe":
            p.wait()
    assert rc == 0, term
    lines = [line for line in term.split(b"\r") if line.startswith(b"deferstitch: ")]
    assert lines, term
    assert all(b" MB read" in line and b" samples/s" in line for line in lines), lines
    assert (b"%)" in lines[-1]) == (source == "file")     # only a file-mode perf.data has a known size
    assert term.endswith(b"\r\x1b[K")                    # the line is wiped at the end
    assert out == run_cli(*argv[:1], path, "--no-symbols").stdout      # and the output untouched


def test_no_progress_when_quiet_or_short():
    path, _ = capture("a_per_task")
    _rc, _out, term = on_a_terminal(["report", path, "-q"], subprocess.DEVNULL, DEFERSTITCH_PROGRESS_DELAY="0")
    assert b"deferstitch: " not in term
    _rc, _out, term = on_a_terminal(["report", path], subprocess.DEVNULL, DEFERSTITCH_PROGRESS_DELAY="3600")
    assert b"deferstitch: " not in term
