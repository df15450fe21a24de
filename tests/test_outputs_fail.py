"""Outputs that never lie: every output-side fault is one line and exit 2, the file the user
already had stays byte for byte, and no temporary is left beside it (output/atomic.py).

Each fault is made for real, through the command in a subprocess, on a real capture: a missing
directory, a directory, a read-only and a full file system (small tmpfs mounts: root only),
/proc/version, standard output on /dev/full, standard input closed, the input as its own output
(also through a symlink and a hard link), and SIGINT/SIGTERM in the middle of a run on the C
engine and on the Python path.
"""
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import CAPTURES, ROOT, capture, need_perf61, run_cli

OLD = b"the user's old file\n"
PYENV = {**os.environ, "PYTHONPATH": str(ROOT)}
COMMANDS = {            # name -> arguments before the input (all write to -o)
    "stitch": ["stitch"], "script": ["script"], "folded": ["folded"],
    "speedscope": ["export", "--format", "speedscope"], "pprof": ["export", "--format", "pprof"],
}
TRACE = CAPTURES / "ftrace" / "trace-userstacktrace.dat"


def snapshot(folder):
    """{name: bytes} of a folder's files (symlinks as their target's name)."""
    out = {}
    for name in sorted(os.listdir(folder)):
        p = os.path.join(folder, name)
        out[name] = os.readlink(p) if os.path.islink(p) else open(p, "rb").read()
    return out


def one_line_exit_2(r, *words):
    err = r.stderr.decode()
    assert r.returncode == 2, err
    assert err.count("\n") == 1 and err.startswith("deferstitch: ") and "Traceback" not in err, err
    for w in words:
        assert w in err, err
    return err


@pytest.fixture(scope="module")
def small():
    return capture("b_per_task")[0]


@pytest.fixture
def mount(tmp_path):
    """mount(options) -> a fresh tmpfs folder; skipped with the reason where mount is refused."""
    mounted = []

    def make(options):
        d = tmp_path / ("m%d" % len(mounted))
        d.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(d)], capture_output=True)
        if r.returncode != 0:
            pytest.skip("cannot mount a tmpfs (needs root): %s" % r.stderr.decode().strip())
        mounted.append(d)
        return d
    yield make
    for d in reversed(mounted):
        subprocess.run(["umount", "-l", str(d)])


def fill(d):
    """Take every block of the file system at ``d``: the next write there fails (ENOSPC)."""
    fd = os.open(d / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


def remount_ro(d):
    r = subprocess.run(["mount", "-o", "remount,ro", str(d)], capture_output=True)
    if r.returncode != 0:
        pytest.skip("cannot remount read-only: %s" % r.stderr.decode().strip())


# -- a bad -o: one line naming the file, nothing written ------------------------------------------
@pytest.mark.parametrize("cmd", sorted(COMMANDS))
def test_bad_output_paths(cmd, small, tmp_path):
    args = COMMANDS[cmd] + [small, "-q", "-o"]
    one_line_exit_2(run_cli(*args, tmp_path / "no" / "such" / "dir" / "out"),
                    "/no/such/dir/out: No such file or directory")
    one_line_exit_2(run_cli(*args, tmp_path), "%s: Is a directory" % tmp_path)
    one_line_exit_2(run_cli(*args, "/proc/version"), "/proc/version: ")
    assert os.listdir(tmp_path) == []


def test_missing_input_leaves_the_output_alone(tmp_path):
    kept = tmp_path / "kept.folded"
    kept.write_bytes(OLD)
    one_line_exit_2(run_cli("folded", tmp_path / "missing.data", "-o", kept), "missing.data")
    assert snapshot(tmp_path) == {"kept.folded": OLD}


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
def test_full_disk_keeps_the_old_file(cmd, small, mount):
    d = mount("size=64k")
    (d / "out").write_bytes(OLD)
    fill(d)
    before = snapshot(d)
    one_line_exit_2(run_cli(*COMMANDS[cmd], small, "-q", "-o", d / "out"),
                    "%s: No space left on device" % (d / "out"))
    assert snapshot(d) == before


@pytest.mark.parametrize("accel", ["1", "0"], ids=["engine", "python"])
def test_disk_full_in_the_middle_of_the_records(accel, small, mount):
    """One free page: the header goes in, the records do not. On the engine, stitch's records
    are written by the C engine itself (engine_sink): its failed write is the same one line."""
    d = mount("size=64k")
    (d / "out").write_bytes(OLD)
    fill(d)
    os.truncate(d / "filler", os.path.getsize(d / "filler") - 4096)
    before = snapshot(d)
    r = subprocess.run([sys.executable, "-m", "deferstitch", "stitch", str(small), "-q", "-o",
                        str(d / "out")], capture_output=True, cwd=ROOT,
                       env={**PYENV, "DEFERSTITCH_ACCEL": accel})
    one_line_exit_2(r, "%s: No space left on device" % (d / "out"))
    assert snapshot(d) == before


@pytest.mark.parametrize("cmd", ["stitch", "folded"])
def test_read_only_file_system(cmd, small, mount):
    d = mount("size=1m")
    (d / "out").write_bytes(OLD)
    remount_ro(d)
    one_line_exit_2(run_cli(*COMMANDS[cmd], small, "-q", "-o", d / "out"), "Read-only file system")
    one_line_exit_2(run_cli(*COMMANDS[cmd], small, "-q", "-o", d / "new"), "Read-only file system")
    assert snapshot(d) == {"out": OLD}


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
def test_standard_output_on_dev_full(cmd, small):
    with open("/dev/full", "wb") as full:
        r = subprocess.run([sys.executable, "-m", "deferstitch", *COMMANDS[cmd], str(small), "-q"],
                           stdout=full, stderr=subprocess.PIPE, cwd=ROOT)
    one_line_exit_2(r, "standard output: No space left on device")


@pytest.mark.parametrize("argv", [["report", "--json"], ["report"], ["info", "--json"]])
def test_printed_reports_on_dev_full(argv):
    """report and info print (not through an output file): more than a buffer's worth of text
    on a full standard output is the same one line, wherever the buffer fills."""
    path, _ = capture("syswide")
    with open("/dev/full", "wb") as full:
        r = subprocess.run([sys.executable, "-m", "deferstitch", argv[0], str(path), *argv[1:]],
                           stdout=full, stderr=subprocess.PIPE, cwd=ROOT)
    one_line_exit_2(r, "standard output: No space left on device")


def test_standard_output_closed_and_broken_pipe(small):
    r = subprocess.run([sys.executable, "-m", "deferstitch", "folded", str(small), "-q"],
                       stdout=subprocess.DEVNULL, preexec_fn=lambda: os.close(1),      # >&-
                       stderr=subprocess.PIPE, cwd=ROOT)
    one_line_exit_2(r, "standard output: Bad file descriptor")
    r = subprocess.run("%s -m deferstitch script %s -q | head -c 10 >/dev/null; exit ${PIPESTATUS[0]}"
                       % (sys.executable, small), shell=True, executable="/bin/bash",
                       capture_output=True, cwd=ROOT)
    assert r.returncode == 0 and r.stderr == b"", r.stderr       # | head stays quiet


@pytest.mark.parametrize("cmd", ["stitch", "folded"])
def test_standard_input_closed(cmd, tmp_path):
    (tmp_path / "out").write_bytes(OLD)
    r = subprocess.run([sys.executable, "-m", "deferstitch", *COMMANDS[cmd], "-", "-q", "-o", "out"],
                       stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(0),   # <&-
                       capture_output=True, cwd=tmp_path, env=PYENV)
    one_line_exit_2(r, "standard input: Bad file descriptor")
    assert snapshot(tmp_path) == {"out": OLD}


# -- the input as its own output ------------------------------------------------------------------
def test_same_file_is_refused(small, tmp_path):
    data = small.read_bytes()
    (tmp_path / "in.data").write_bytes(data)
    os.symlink("in.data", tmp_path / "link.data")
    os.link(tmp_path / "in.data", tmp_path / "hard.data")
    before = snapshot(tmp_path)
    for args in (["stitch", "in.data", "-o", "in.data"], ["stitch", "in.data", "-o", "link.data"],
                 ["stitch", "link.data", "-o", "hard.data"], ["folded", "in.data", "-o", "in.data"],
                 ["script", "hard.data", "-o", "link.data"],
                 ["export", "--format", "pprof", "in.data", "-o", "hard.data"]):
        one_line_exit_2(run_cli(*args, "-q", cwd=tmp_path, env=PYENV), "is the input file")
    with open(tmp_path / "in.data", "rb") as stdin:      # stitch - -o in.data < in.data
        r = subprocess.run([sys.executable, "-m", "deferstitch", "stitch", "-", "-o", "in.data"],
                           stdin=stdin, capture_output=True, cwd=tmp_path, env=PYENV)
    one_line_exit_2(r, "is the input file")
    assert snapshot(tmp_path) == before
    # a new output, and an existing one that is another file, are fine
    assert run_cli("folded", "in.data", "-q", "-o", "new.folded", cwd=tmp_path, env=PYENV).returncode == 0


def test_success_replaces_through_a_symlink_and_keeps_the_mode(small, tmp_path):
    (tmp_path / "real.folded").write_bytes(OLD)
    os.chmod(tmp_path / "real.folded", 0o640)
    os.symlink("real.folded", tmp_path / "link.folded")
    r = run_cli("folded", small, "-q", "-o", tmp_path / "link.folded")
    assert r.returncode == 0, r.stderr
    assert os.path.islink(tmp_path / "link.folded")
    assert (tmp_path / "real.folded").read_bytes() == run_cli("folded", small, "-q").stdout
    assert os.stat(tmp_path / "real.folded").st_mode & 0o777 == 0o640
    assert sorted(os.listdir(tmp_path)) == ["link.folded", "real.folded"]


# -- interrupted mid-run --------------------------------------------------------------------------
def _temporaries(folder, name):
    return [f for f in os.listdir(folder) if f.startswith("." + name + ".") and f.endswith(".tmp")]


def _interrupt(args, folder, sig, env):
    """Run ``deferstitch ARGS``; once its temporary beside ``folder/out`` has data (the run is
    under way) send ``sig``. Returns the exit status, or None when the run ended first."""
    p = subprocess.Popen([sys.executable, "-m", "deferstitch", *map(str, args)], cwd=folder,
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while p.poll() is None and time.monotonic() < deadline:
            tmp = _temporaries(folder, "out")
            try:
                if tmp and os.path.getsize(os.path.join(folder, tmp[0])) > 0:
                    break
            except OSError:
                pass
            time.sleep(0.002)
        if p.poll() is not None:
            return None
        p.send_signal(sig)
        p.wait(timeout=120)
        assert b"Traceback" not in p.stderr.read()
        return p.returncode
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stderr.close()


SIGNALS = [(signal.SIGINT, 130), (signal.SIGTERM, 143)]


@pytest.mark.parametrize("sig,status", SIGNALS, ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("cmd,accel", [("stitch", "1"), ("script", "1"), ("stitch", "0")],
                         ids=["stitch-engine", "script-engine", "stitch-python"])
def test_signal_mid_run_keeps_the_old_file(cmd, accel, sig, status, tmp_path):
    path, _ = capture("c_per_task")      # the biggest capture: long enough to be caught running
    (tmp_path / "out").write_bytes(OLD)
    env = {**PYENV, "DEFERSTITCH_ACCEL": accel}
    for _attempt in range(5):           # a run that ended before the signal proves nothing: again
        (tmp_path / "out").write_bytes(OLD)
        rc = _interrupt([cmd, path, "-q", "-o", "out"], tmp_path, sig, env)
        if rc is not None:
            break
    else:
        pytest.fail("the run always ended before it could be interrupted")
    assert rc == status
    assert snapshot(tmp_path) == {"out": OLD}


# -- trace-cmd and the perf plugin ----------------------------------------------------------------
def test_trace_outputs(tmp_path, mount):
    for what in ("script", "folded"):
        one_line_exit_2(run_cli("trace", what, TRACE, "-o", tmp_path / "no" / "out"), "No such file")
        one_line_exit_2(run_cli("trace", what, TRACE, "-o", TRACE), "is the input file")
    d = mount("size=16k")
    (d / "out").write_bytes(OLD)
    fill(d)
    before = snapshot(d)
    one_line_exit_2(run_cli("trace", "script", TRACE, "-o", d / "out"), "No space left on device")
    assert snapshot(d) == before


def test_perf_plugin_files(small, tmp_path):
    perf, _ = need_perf61()
    assert run_cli("stitch", small, "-q", "-o", tmp_path / "st.data").returncode == 0
    (tmp_path / "out.txt").write_bytes(OLD)
    (tmp_path / "rep.json").write_bytes(OLD)
    before = snapshot(tmp_path)
    script = str(ROOT / "perf_scripts" / "stitch.py")
    for opts in (["-o", "no/such/out.txt"], ["-o", "out.txt", "--json", "rep.json", "--report-to", "."],
                 ["-o", "st.data"]):
        r = subprocess.run([perf, "script", "-i", "st.data", "-s", script, "--", *opts], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
        assert r.stderr.strip().splitlines()[-1].startswith("stitch.py: "), r.stderr
        assert snapshot(tmp_path) == before
    r = subprocess.run([perf, "script", "-i", "st.data", "-s", script, "--", "--folded", "-o", "out.txt",
                        "--json", "rep.json"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "rep.json").read_bytes().startswith(b"{")
    assert sorted(os.listdir(tmp_path)) == ["out.txt", "rep.json", "st.data"]


# -- a plain install gives every format -----------------------------------------------------------
def index_reachable():
    """pip reaches its package index: asked about pip itself, which every index has (pip's "No
    matching distribution" is also its answer to a misspelt requirement of ours)."""
    p = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "pip"],
                       capture_output=True, text=True, timeout=300)
    return p.returncode == 0


def test_plain_install_exports_pprof_and_reads_zstd(tmp_path):
    """``pip install .`` (no extras) into a fresh venv: pprof (written without protobuf) and
    perf record -z (zstandard) work. The package's files are copied first: pip leaves build/ in the tree."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("setup.py", "setup.cfg", "README.md"):
        (src / name).write_bytes((ROOT / name).read_bytes())
    subprocess.run(["cp", "-r", str(ROOT / "deferstitch"), str(src)], check=True)
    for f in (src / "deferstitch").glob("*.so"):
        f.unlink()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    r = subprocess.run([sys.executable, "-m", "pip", "--python", py, "install", "-q", str(src)],
                       capture_output=True, text=True, timeout=900, cwd=tmp_path)
    if r.returncode != 0 and "no such option: --python" in r.stderr:
        pytest.skip("pip older than 22.3 (no --python): python3 -m pip install -U pip")
    if r.returncode != 0 and not index_reachable():
        pytest.skip("package index unreachable: %s" % r.stderr.strip().splitlines()[-1])
    assert r.returncode == 0, r.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    data = ROOT / "examples" / "compressed.data"
    r = subprocess.run([py, "-m", "deferstitch", "export", str(data), "--format", "pprof", "-q",
                        "-o", "out.pb.gz"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    import gzip
    assert len(gzip.decompress((tmp_path / "out.pb.gz").read_bytes())) > 1000
    r = subprocess.run([py, "-c", "import deferstitch, sys; print(deferstitch.__file__)"],
                       capture_output=True, text=True, cwd=tmp_path, env=env)
    assert str(venv) in r.stdout          # the installed copy ran, not the checkout
