"""Streaming: the real pipe capture fed slowly through a real pipe gives what the file gives.

    cat pipe.data | deferstitch stitch - -o out.data
    cat pipe.data | deferstitch folded -

The writer side dribbles the bytes in uneven pieces (1 byte to 64 KiB, the first ones tiny so
that even the header arrives split) with short pauses, so every read the reader makes can come
back short. The output must be byte for byte the file-mode run's, and the report must show the
work stayed bounded by what was pending.
"""
import json
import os
import random
import subprocess
import sys
import threading
import time

import pytest

from conftest import CAPTURES, ROOT, capture, need_engine, run_cli
from deferstitch.errors import FormatError


def slow_feed(path, argv, seed=7, pause=0.002, accel=None, data=None):
    """Run the CLI with ``path`` (or ``data``) dribbled into its stdin through an OS pipe;
    (rc, stdout, stderr). ``accel``: DEFERSTITCH_ACCEL for the run."""
    data = path.read_bytes() if data is None else data
    rnd = random.Random(seed)
    env = dict(os.environ, DEFERSTITCH_ACCEL=accel) if accel is not None else None
    p = subprocess.Popen([sys.executable, "-m", "deferstitch", *map(str, argv)], cwd=ROOT, env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    got = {}

    def drain():
        got["out"], got["err"] = p.stdout.read(), p.stderr.read()
    t = threading.Thread(target=drain)
    t.start()
    pos, n = 0, 0
    fd = p.stdin.fileno()
    while pos < len(data):
        step = rnd.choice([1, 3, 7, 8, 9]) if n < 40 else rnd.choice([1, 100, 4096, 4097, 65536])
        pos += os.write(fd, data[pos:pos + step])
        n += 1
        if n % 8 == 0:
            time.sleep(pause)
    p.stdin.close()
    t.join(120)
    return p.wait(60), got["out"], got["err"]


@pytest.mark.parametrize("how", ["slow", "cat"])
def test_stitch_from_a_pipe_equals_the_file_run(tmp_path, how):
    path, _ = capture("pipe")
    ref = tmp_path / "ref.data"
    r = run_cli("stitch", path, "-q", "-o", ref)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out.data"
    if how == "slow":
        rc, _o, err = slow_feed(path, ["stitch", "-", "-q", "-o", out])
    else:
        p = subprocess.run("cat '%s' | '%s' -m deferstitch stitch - -q -o '%s'" % (path, sys.executable, out),
                           shell=True, cwd=ROOT, capture_output=True)
        rc, err = p.returncode, p.stderr
    assert rc == 0, err
    assert out.read_bytes() == ref.read_bytes()


def test_stitch_from_a_slow_pipe_to_stdout(tmp_path):
    path, _ = capture("pipe")
    ref = tmp_path / "ref.data"
    assert run_cli("stitch", path, "-q", "-o", ref).returncode == 0
    rc, out, err = slow_feed(path, ["stitch", "-", "-q"], seed=11)
    assert rc == 0, err
    assert out == ref.read_bytes()


@pytest.mark.parametrize("args", [[], ["--no-symbols"], ["--weight", "period"], ["symbols"]])
def test_folded_from_a_slow_pipe_equals_the_file_run(args, tmp_path):
    path, _ = capture("pipe")
    if args == ["symbols"]:         # names from the guest's kallsyms and the workload binary
        (tmp_path / "opt").mkdir()
        (tmp_path / "opt" / "rig").symlink_to(CAPTURES / "bin")
        args = ["--kallsyms", CAPTURES / "kallsyms.xz", "--symfs", tmp_path]
    ref = run_cli("folded", path, *args)
    assert ref.returncode == 0, ref.stderr
    rc, out, err = slow_feed(path, ["folded", "-", *args], seed=len(args))
    assert rc == 0, err
    assert out == ref.stdout and out.count(b"\n") > 20
    p = subprocess.run("cat '%s' | '%s' -m deferstitch folded - %s" % (path, sys.executable, " ".join("'%s'" % a for a in args)),
                       shell=True, cwd=ROOT, capture_output=True)
    assert p.returncode == 0 and p.stdout == ref.stdout


def test_report_from_a_slow_pipe_is_bounded_and_equal():
    path, _ = capture("pipe")
    ref = json.loads(run_cli("report", path, "--json").stdout)
    rc, out, err = slow_feed(path, ["report", "-", "--json"], seed=3)
    assert rc == 0, err
    got = json.loads(out)
    assert got == ref and got["conserved"]
    # memory follows pending work, not the input: the stitcher held what waited for a stack
    # (tens of samples); the sorter held what perf's FINISHED_ROUND rule makes it hold (this
    # capture has only 5 rounds) — the same through a pipe as from the file (got == ref)
    assert got["max_pending"] < 100


@pytest.mark.parametrize("argv", [["stitch", "-", "-q"], ["folded", "-", "--no-symbols"],
                                  ["script", "-", "--no-symbols"], ["report", "-", "--json"]])
def test_engine_equals_python_through_a_slow_pipe(argv):
    """The C engine on standard input (records cut anywhere by short reads) against the Python
    path, byte for byte, on the whole pipe capture and on one cut inside a record (the same
    error line, after the same output)."""
    need_engine("require")
    path, _ = capture("pipe")
    whole = path.read_bytes()
    for data in (whole, whole[:len(whole) * 2 // 3 + 5]):
        py = slow_feed(path, argv, seed=5, accel="0", data=data)
        fast = slow_feed(path, argv, seed=5, accel="require", data=data)
        assert fast == py
        assert py[0] == (0 if data is whole else 2), py[2]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ is Linux's")
def test_standard_input_pipe_is_widened_and_a_file_is_left_alone(tmp_path):
    """PerfData.open('-') asks for a 1 MiB pipe (fewer wake-ups of writer and reader: the
    stdin-vs-file bench); a regular file on standard input is read as it is."""
    import fcntl
    from deferstitch.perfdata import reader
    F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)
    r, w = os.pipe()
    saved = os.dup(0)
    try:
        os.dup2(r, 0)
        assert fcntl.fcntl(0, F_GETPIPE_SZ) < reader.CHUNK
        os.close(w)                        # an empty pipe: open() gives up at the magic
        with pytest.raises(FormatError, match=r"^<stdin>: offset 0x0: empty file"):
            reader.PerfData.open("-")
        assert fcntl.fcntl(r, F_GETPIPE_SZ) == reader.CHUNK
        plain = tmp_path / "plain"
        plain.write_bytes(open(capture("a_per_task")[0], "rb").read())
        with open(plain, "rb") as f:
            os.dup2(f.fileno(), 0)
            with reader.PerfData.open("-") as perf:
                assert sum(1 for _ in perf.records()) > 0
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(r)


def test_a_pipe_is_read_for_what_it_holds():
    """reader._Pipe reads what the pipe holds (FIONREAD), waits when it is empty, and ends
    with b"" once the writer is gone: exact reads, no 1 MiB shrunk to what came (which
    fragmented the heap: `stitch -` grew with the input before)."""
    import threading
    from deferstitch.perfdata import reader
    r, w = os.pipe()
    p = reader._Pipe(r)
    try:
        os.write(w, b"x" * 3000)
        assert p.read(reader.CHUNK) == b"x" * 3000
        os.write(w, b"z" * 100)
        assert p.read(40) == b"z" * 40 and p.read(reader.CHUNK) == b"z" * 60

        def later():
            os.write(w, b"y" * 10)
            os.close(w)
        threading.Timer(0.2, later).start()
        assert p.read(reader.CHUNK) == b"y" * 10        # waited in select() for it
        assert p.read(reader.CHUNK) == b""
    finally:
        p.close()
