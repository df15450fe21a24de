"""The CLI's surface: every option says what it does, info offers only what it uses, inputs
default to what the help says (./perf.data, ./trace.dat), tid 0 is swapper in the report as
in script, and a file without deferred callchains gets a one-line hint, not an error."""
import argparse
import json
import os
import shutil

import pytest

from conftest import CAPTURES, ROOT, capture, run_cli
from tracecmd_text import need_libtracecmd
from deferstitch.cli import build_parser


def subcommands():
    p = build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def test_every_option_has_a_help_line():
    for name, sp in subcommands().items():
        for a in sp._actions:
            assert a.help, "%s %s has no help" % (name, a.option_strings or a.dest)


def test_info_offers_no_stitching_options(tmp_path):
    helptext = run_cli("info", "--help").stdout.decode()
    assert "--max-pending" not in helptext and "--quiet" not in helptext
    assert "./perf.data" in helptext
    path, _ = capture("a_per_task")
    assert run_cli("info", path, "-q").returncode == 2          # argparse: not an option of info


def here(tmp_path, *args):
    """The CLI run in tmp_path (so that a default input is tmp_path's), on this checkout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return run_cli(*args, cwd=tmp_path, env=env)


def test_perf_data_default_input(tmp_path):
    path, _ = capture("a_per_task")
    shutil.copy(path, tmp_path / "perf.data")
    p = here(tmp_path, "report", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == json.loads(run_cli("report", path, "--json").stdout)


def test_trace_dat_default_input(tmp_path):
    real = CAPTURES / "ftrace" / "trace-userstacktrace.dat"
    need_libtracecmd()
    shutil.copy(real, tmp_path / "trace.dat")
    named = here(tmp_path, "trace", "report", "trace.dat")
    assert named.returncode == 0, named.stderr
    for args in (["trace"], ["trace", "report"]):
        p = here(tmp_path, *args)
        assert p.returncode == 0, (args, p.stderr)
        assert p.stdout == named.stdout, args
    assert "./trace.dat" in run_cli("trace", "--help").stdout.decode()


def test_tid_0_is_swapper_in_report_as_in_script():
    path, _ = capture("syswide")
    d = json.loads(run_cli("report", path, "--json").stdout)
    assert d["by_thread"]["0"]["comm"] == "swapper"
    table = run_cli("report", path).stdout.decode().splitlines()
    assert any(l.split()[:2] == ["swapper", "0"] for l in table)
    script = run_cli("script", path, "--no-symbols").stdout.decode().splitlines()
    assert any(l.split()[:2] == ["swapper", "0"] for l in script)


@pytest.mark.parametrize("cmd", ["report", "stitch"])
def test_hint_for_a_file_without_deferred_callchains(tmp_path, cmd):
    out = ["-o", tmp_path / "o.data"] if cmd == "stitch" else []
    path, _ = capture("baseline_fp_nodefer")
    p = run_cli(cmd, path, *out)
    assert p.returncode == 0, p.stderr
    hint = "deferstitch: %s: no deferred callchains (record with --call-graph fp,defer)" % path
    assert hint in p.stderr.decode().splitlines()
    assert run_cli(cmd, path, "-q", *out).stderr == b""
    with open(path, "rb") as f:
        assert hint.replace(str(path), "<stdin>") in run_cli(cmd, "-", *out, stdin=f).stderr.decode()
    deferred, _ = capture("a_per_task")
    assert b"no deferred callchains" not in run_cli(cmd, deferred, *out).stderr
