"""The command line as a newcomer meets it: Ctrl-C at any moment of start-up, the warning when the
recorded kernel's symbols are nowhere, each command's own usage on a wrong option with a hint to
its --help, trace's -q and per-command help, one wording for one fault, no HTML or JSON poured
onto a terminal, and bench/build.py saying what its number is."""
import json
import lzma
import os
import pty
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CAPTURES, ROOT, TREE, capture, run_cli

TRACE = CAPTURES / "ftrace" / "trace-userstacktrace.dat"


# -- Ctrl-C during start-up ----------------------------------------------------------------------
@pytest.mark.parametrize("nth", [1, 8, 20])
def test_ctrl_c_while_importing_is_exit_130_without_traceback(nth):
    """A real SIGINT to a real process while it imports its modules: ``-X importtime`` prints
    each import as it ends, and the signal goes out right after the nth of our modules (the
    package's own line is left out: what follows it is runpy's, out of our reach, as is the
    interpreter's start-up before it)."""
    path, _ = capture("a_per_task")
    p = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "deferstitch", "report", str(path)],
                         cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen, err = 0, []
    for line in p.stderr:
        err.append(line.decode())
        if b" deferstitch." in line:
            seen += 1
            if seen == nth:
                p.send_signal(signal.SIGINT)
                break
    rest = p.stderr.read().decode()
    rc = p.wait(timeout=60)
    assert seen == nth, "only %d imports of ours seen" % seen
    assert "Traceback" not in rest and "KeyboardInterrupt" not in rest, rest
    assert rc == 130, (rc, rest[-2000:])


def test_ctrl_c_inside_an_exec_of_a_string_is_still_exit_130(tmp_path):
    """A SIGINT that lands inside exec() of a string (namedtuple's, dataclasses') is caught as
    any other, yet CPython remembers it as unhandled and, under ``-m`` (as ``python -m
    deferstitch``), would end the process by SIGINT: rc -2."""
    (tmp_path / "ctrl_c_probe.py").write_text(
        "import deferstitch.cli as cli\n"
        "cli.main = lambda: exec('import os, signal; os.kill(os.getpid(), signal.SIGINT)')\n"
        "from deferstitch.__main__ import run\n"
        "run()\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    p = subprocess.run([sys.executable, "-m", "ctrl_c_probe"], cwd=ROOT, env=env,
                       capture_output=True, text=True)
    assert (p.returncode, p.stderr) == (130, ""), (p.returncode, p.stderr)


def test_the_editable_install_runs_nothing_at_python_start_up():
    """make's .venv holds deferstitch by `pip install -e .`: its .pth must be a path, not an
    import hook, whose imports run in Python's start-up (site), before deferstitch can catch a
    Ctrl-C (a 'Fatal Python error: init_import_site' traceback)."""
    import site
    pths = [p for d in site.getsitepackages() for p in Path(d).glob("__editable__.deferstitch-*.pth")]
    if not pths:
        pytest.skip("deferstitch is not an editable install here (make test's .venv is)")
    for pth in pths:
        lines = [l for l in pth.read_text().splitlines() if l.strip()]
        assert lines == [str(TREE)], lines


# -- kernel symbols of another kernel ------------------------------------------------------------
def test_kernel_symbols_not_found_is_said_once(tmp_path):
    """The captures were recorded on the guest's 7.2.13 kernel (its build id in the kernel's
    MMAP2), not this one; with no build-id cache, perf's own line says so once, and the kernel
    frames stay [kernel.kallsyms]. With the guest's kallsyms in the build-id cache, no line and
    kernel names."""
    path, _ = capture("a_per_task")
    if os.uname().release.startswith("7.2.13"):
        pytest.skip("this machine runs the captures' kernel")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    bid = "f8da1e460d1343b62f4a8880ae5ce63634756e7a"     # `deferstitch info`: [kernel.kallsyms]
    for cmd in ("folded", "script"):
        for accel in ("1", "0"):
            p = run_cli(cmd, path, env={**env, "DEFERSTITCH_ACCEL": accel})
            assert p.returncode == 0, p.stderr
            assert p.stderr.decode() == "No kallsyms or vmlinux with build-id %s was found\n" % bid
            assert b"[kernel.kallsyms]" in p.stdout
    assert run_cli("folded", path, "-q", env=env).stderr == b""
    cache = home / ".debug" / "[kernel.kallsyms]" / bid
    cache.mkdir(parents=True)
    (cache / "kallsyms").write_bytes(lzma.open(CAPTURES / "kallsyms.xz").read())
    p = run_cli("folded", path, env=env)
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    assert b"do_syscall_64" in p.stdout and b"[kernel.kallsyms]" not in p.stdout


# -- usage -----------------------------------------------------------------------------------------
COMMANDS = [["info"], ["stitch"], ["report"], ["script"], ["folded"], ["flamegraph"],
            ["export", "--format", "pprof"], ["fleet", "in.data"], ["trace", "report"], ["trace", "script"],
            ["trace", "flamegraph"]]


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_wrong_option_gives_the_commands_own_usage(cmd):
    name = " ".join(c for c in cmd if not c.startswith("-") and c not in ("pprof", "in.data"))
    p = run_cli(*cmd, "--no-such-option")
    err = p.stderr.decode()
    assert p.returncode == 2 and p.stdout == b"", err
    assert err.startswith("usage: deferstitch %s " % name), err
    assert "deferstitch %s: error: unrecognized arguments: --no-such-option" % name in err, err
    assert err.endswith("Try 'deferstitch %s --help' for more information.\n" % name), err


def test_no_command_hints_at_help():
    p = run_cli()
    err = p.stderr.decode()
    assert p.returncode == 2 and "required: COMMAND" in err, err
    assert err.endswith("Try 'deferstitch --help' for more information.\n"), err


@pytest.mark.parametrize("argv, prog, says", [
    (["nosuch", "x.dat"], "trace", "'nosuch' is not one of report, script, folded, flamegraph"),
    (["report", "a.dat", "b.dat"], "trace report", "one command and one trace.dat, not 3 arguments")])
def test_trace_wrong_words_give_the_usage_and_the_hint(argv, prog, says):
    p = run_cli("trace", *argv)
    err = p.stderr.decode()
    assert p.returncode == 2 and err.startswith("usage: deferstitch %s " % prog), err
    assert "deferstitch %s: error: %s\n" % (prog, says) in err, err
    assert err.endswith("Try 'deferstitch %s --help' for more information.\n" % prog), err


def test_trace_option_of_another_command_is_refused_with_that_commands_usage():
    p = run_cli("trace", "script", TRACE, "--json")
    err = p.stderr.decode()
    assert p.returncode == 2 and err.startswith("usage: deferstitch trace script "), err
    assert "--json is not an option of trace script" in err, err


def test_trace_help_is_each_commands_own():
    helps = {c: run_cli("trace", c, "--help") for c in ("report", "script", "folded", "flamegraph")}
    for c, p in helps.items():
        assert p.returncode == 0 and p.stdout.decode().startswith("usage: deferstitch trace %s" % c)
    text = {c: p.stdout.decode() for c, p in helps.items()}
    assert len(set(text.values())) == 4
    assert "--json" in text["report"] and "--json" not in text["script"]
    assert "--width" in text["flamegraph"] and "--width" not in text["folded"]
    assert "--max-stack" in text["script"] and "--max-stack" not in text["report"]
    assert "-q, --quiet" in text["folded"]
    assert "trace CMD --help" in run_cli("trace", "--help").stdout.decode()


def test_trace_quiet_is_an_option_and_changes_no_output(tmp_path):
    import tracecmd_synth as S
    from tracecmd_text import need_libtracecmd
    need_libtracecmd()
    path = S.deferred(tmp_path / "t.dat")
    for cmd in ("report", "folded"):
        loud, quiet = run_cli("trace", cmd, path), run_cli("trace", cmd, "-q", path)
        assert loud.returncode == quiet.returncode == 0, quiet.stderr
        assert quiet.stdout == loud.stdout and quiet.stderr == b""
    assert run_cli("trace", "-q", path, "--json").returncode == 0     # either order


def test_trace_quiet_silences_the_format_warning(tmp_path):
    """An event format that does not parse (no ID: libtraceevent drops it, and so do we) is one
    warning line; -q leaves it out."""
    import tracecmd_synth as S
    data = bytearray(S.deferred(tmp_path / "ok.dat").read_bytes())
    at = data.index(b"ID:", data.index(b"name: workqueue_execute_start"))
    data[at:at + 3] = b"XD:"
    (tmp_path / "bad.dat").write_bytes(bytes(data))

    def run(*args):
        return run_cli("trace", "report", tmp_path / "bad.dat", "--json", *args)
    loud, quiet = run(), run("-q")
    assert loud.returncode == 0 and "did not parse" in loud.stderr.decode(), loud.stderr
    assert quiet.returncode == 0 and quiet.stderr == b"", quiet.stderr
    assert json.loads(quiet.stdout)["ftrace"]["event_formats_not_parsed"] >= 1


# -- one fault, one wording -----------------------------------------------------------------------
def test_a_missing_or_wrong_input_is_said_the_same_way_by_both_sides(tmp_path):
    for missing, err in (("none.data", "No such file or directory"), ("", "Is a directory")):
        path = tmp_path / missing
        for args in (["report", path], ["folded", path], ["trace", "report", path],
                     ["trace", "folded", path]):
            p = run_cli(*args)
            assert p.returncode == 2 and p.stderr.decode() == "deferstitch: %s: %s\n" % (path, err), \
                (args, p.stderr)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    perf_data = capture("compressed")[0]
    for args, err in ((["report", empty], "empty file, not a perf.data"),
                      (["trace", "report", empty], "empty file, not a trace.dat"),
                      (["folded", TRACE], "not a perf.data file (magic %r)" % TRACE.read_bytes()[:8]),
                      (["trace", "folded", perf_data],
                       "not a trace.dat file (magic %r)" % perf_data.read_bytes()[:10])):
        p = run_cli(*args)
        assert p.returncode == 2 and p.stderr.decode() == "deferstitch: %s: offset 0x0: %s\n" % (args[-1], err), \
            (args, p.stderr)


# -- no markup onto a terminal -------------------------------------------------------------------
@pytest.mark.parametrize("args", [["stitch"], ["flamegraph"], ["export", "--format", "speedscope"],
                                  ["export", "--format", "pprof"], ["trace", "flamegraph"]],
                         ids=lambda a: "-".join(a[-1:] if a[0] == "export" else a))
def test_a_terminal_is_refused_like_stitch(args):
    """stdout a real pseudo-terminal: one line, exit 2, nothing written to it."""
    path = TRACE if args[0] == "trace" else capture("compressed")[0]
    master, slave = pty.openpty()
    try:
        p = subprocess.run([sys.executable, "-m", "deferstitch", *args, str(path)], cwd=ROOT,
                           stdout=slave, stderr=subprocess.PIPE, timeout=60)
        os.set_blocking(master, False)
        try:
            shown = os.read(master, 1 << 16)
        except (BlockingIOError, OSError):
            shown = b""
    finally:
        os.close(master)
        os.close(slave)
    err = p.stderr.decode()
    assert p.returncode == 2 and err.count("\n") == 1, err
    assert err.startswith("deferstitch: refusing to write ") and "to a terminal: give -o FILE or redirect" in err
    assert shown == b""


# -- bench/build.py ----------------------------------------------------------------------------------
def test_bench_replicate_says_what_it_wrote(tmp_path):
    """Its number is the count of records written, which `info --json` counts again."""
    path, _ = capture("a_per_task")
    out = tmp_path / "x2.data"
    p = subprocess.run([sys.executable, "bench/build.py", "replicate", str(path), "2", str(out)],
                       cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    n = int(p.stdout.split(": ", 1)[1].split()[0])
    assert p.stdout == "%s: %d records written (%s x2)\n" % (out, n, path)
    info = json.loads(run_cli("info", out, "--json").stdout)
    assert sum(info["records"].values()) == n


@pytest.mark.parametrize("argv", [[], ["replicate"], ["threads", "4"], ["nothing", "a", "b", "c"]])
def test_bench_build_without_its_arguments_prints_its_usage(argv):
    p = subprocess.run([sys.executable, "bench/build.py", *argv], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert "python3 bench/build.py replicate CAPTURE N OUT.data" in p.stderr, p.stderr
