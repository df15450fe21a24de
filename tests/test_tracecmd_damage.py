"""Damaged and incomplete trace.dat files through ``deferstitch trace``, run as users run it (a
subprocess: a crash in libtracecmd or in a copy is a signal here, not a dead test run).

Each must end in one line naming the file (with an offset where there is one), exit status 2,
and what was read before the damage (report --json: a conserved report, "complete": false and
the "error");
never a traceback or a signal. The files: the fuzz repros in tests/data (see its README), the
real ftrace capture cut at several points, cut while it is read, and with its compressed ring
buffer data damaged (libtracecmd then ends that CPU quietly: it must not pass for a short trace).
"""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import CAPTURES, DATA, ROOT, run_cli
from tracecmd_text import need_libtracecmd

REAL = CAPTURES / "ftrace" / "trace-userstacktrace.dat"
REPROS = ["trace-signal11-2-188.dat", "trace-signal11-2-239.dat", "trace-signal7-2-265.dat",
          "trace-keyerror-cookie.dat", "trace-segv-small.dat", "trace-typeerror-int.dat",
          "trace-segv-2.dat", "trace-segv-3.dat"]


def need_trace_cmd():
    if shutil.which("trace-cmd") is None:
        pytest.skip("trace-cmd not installed: apt-get install trace-cmd")


def one_line_exit_2(p, path):
    """The CLI's answer to bad input; returns the line."""
    err = p.stderr.decode()
    assert p.returncode == 2, (p.returncode, err)        # a signal is a negative returncode
    lines = err.splitlines()        # warnings about the file (formats that did not parse) first
    assert "Traceback" not in err and lines and all(": warning: " in l for l in lines[:-1]), err
    err = lines[-1] + "\n"
    assert err.startswith("deferstitch: %s: " % path), err
    return err


def partial_report(p):
    """report --json's stdout after damage: what was read, conserved, marked incomplete."""
    d = json.loads(p.stdout)
    assert d["conserved"] and d["samples"] == d["stitched"] + d["passed"] + sum(d["unmatched"].values())
    assert d["complete"] is False and d["error"], sorted(d)
    return d


@pytest.mark.parametrize("name", REPROS)
def test_fuzz_repros_one_line_exit_2(name):
    path = DATA / name
    p = run_cli("trace", "report", path, "--json")
    err = one_line_exit_2(p, path)
    assert "offset 0x" in err, err
    d = partial_report(p)
    assert d["error"] == err[len("deferstitch: "):].strip()
    for cmd in ("script", "folded"):
        one_line_exit_2(run_cli("trace", cmd, path), path)


def test_overrun_names_the_record(tmp_path):
    """The damaged record's size and where it is, and how many records came before it."""
    path = DATA / "trace-segv-small.dat"
    err = one_line_exit_2(run_cli("trace", "report", path), path)
    # our page reader reads the compressed pages too: it names the page's commit (libtracecmd's
    # way, DEFERSTITCH_ACCEL=0 with no walk, names the page)
    assert re.search(r"offset 0x[0-9a-f]+ of the zstd-decompressed data: CPU 0: an event of "
                     r"\d+ bytes at byte \d+ of its page overruns the (4096-byte page|page's "
                     r"\d+ bytes of events)", err), err


def test_format_without_a_needed_field():
    path = DATA / "trace-keyerror-cookie.dat"
    err = one_line_exit_2(run_cli("trace", "report", path), path)
    assert "user_unwind_cookie" in err and "no field 'cookie'" in err, err


def _v6(tmp_path):
    """The real capture as an uncompressed trace.dat v6 (libtracecmd mmaps its pages)."""
    need_trace_cmd()
    v6 = tmp_path / "v6.dat"
    subprocess.run(["trace-cmd", "convert", "-i", str(REAL), "-o", str(v6), "--file-version", "6",
                    "--compression", "none"], check=True, capture_output=True)
    return v6


def test_real_capture_cut_at_several_points(tmp_path):
    sources = [REAL.read_bytes(), _v6(tmp_path).read_bytes()]
    for i, data in enumerate(sources):
        for frac in (0.02, 0.3, 0.75, 0.97, 0.9999):
            cut = tmp_path / ("cut-%d-%s.dat" % (i, frac))
            cut.write_bytes(data[:int(len(data) * frac)])
            one_line_exit_2(run_cli("trace", "report", cut, "--json"), cut)


# Reads a trace.dat, cuts it to half after 100 events, and reads on: the error must say so.
# A subprocess: on an uncompressed file libtracecmd has the pages mapped, and reading a page
# past the new end is SIGBUS.
CUT_WHILE_READ = """
import os, sys
from deferstitch.errors import FormatError
from deferstitch.tracecmd.bridge import Trace
path = sys.argv[1]
n = 0
try:
    with Trace(path) as t:
        for ev in t:
            n += 1
            if n == 100:
                os.truncate(path, os.path.getsize(path) // 2)
except FormatError as err:
    print(n, err)
    sys.exit(0)
print(n, "no error")
sys.exit(1)
"""


def test_cut_while_it_is_read(tmp_path):
    for src in (REAL, _v6(tmp_path)):
        path = tmp_path / "reading.dat"
        shutil.copyfile(src, path)
        p = subprocess.run([sys.executable, "-c", CUT_WHILE_READ, str(path)], cwd=ROOT,
                           capture_output=True, text=True)
        assert p.returncode == 0, (src, p.returncode, p.stdout, p.stderr)
        n, msg = p.stdout.split(" ", 1)
        # noticed when the next page is to be read (fstat once a page, not once a record)
        assert 100 <= int(n) < 1000 and "was cut from" in msg and "while it was read" in msg, p.stdout
        assert msg.startswith("%s: offset 0x" % path), msg


def _cpu_data(path):
    """(offset, size) of the CPU data in the file, as trace-cmd dump shows them (v7)."""
    out = subprocess.run(["trace-cmd", "dump", "--flyrecord", "-i", str(path)], check=True,
                         capture_output=True, text=True).stdout
    found = re.findall(r"^\s*\d+\s+(\d+)\s+(\d+)\s+\[id, data offset and size\]", out, re.M)
    if not found:
        pytest.skip("this trace-cmd dump does not show the data offsets")
    return [(int(o), int(s)) for o, s in found]


def test_damaged_compressed_data_is_incomplete(tmp_path):
    """Bytes flipped inside the zstd-compressed ring buffer: libtracecmd cannot decompress that
    chunk and ends the CPU there; we report the events before it, say where, exit 2."""
    need_trace_cmd()
    full = json.loads(run_cli("trace", "report", REAL, "--json").stdout)["samples"]
    data = REAL.read_bytes()
    for off, size in _cpu_data(REAL):
        for frac in (0.1, 0.6):
            bad = bytearray(data)
            at = off + int(size * frac)
            bad[at:at + 32] = bytes(b ^ 0x5A for b in bad[at:at + 32])
            path = tmp_path / ("bad-%d.dat" % at)
            path.write_bytes(bytes(bad))
            p = run_cli("trace", "report", path, "--json")
            err = one_line_exit_2(p, path)
            # our reader names the chunk; libtracecmd's way ends the CPU there ("incomplete")
            assert "incomplete" in err or "does not decompress" in err, err
            d = partial_report(p)
            assert 0 <= d["samples"] < full, (d["samples"], full)


def test_format_that_does_not_parse(tmp_path):
    """user_unwind_cookie's format text broken ("format:" misspelt): libtraceevent 1.7 keeps the
    event without fields (we need its cookie: one line, exit 2), 1.9 drops the format (a warning
    line, the report counts its events as anomalies and the formats as not parsed). Which answer
    is due is read from the libtraceevent the loader finds (1.8, not seen here, taken as 1.9)."""
    import tracecmd_synth as S
    path = S.deferred(tmp_path / "ok.dat")
    data = bytearray(path.read_bytes())
    at = data.index(b"format:", data.index(b"name: user_unwind_cookie"))
    data[at:at + 7] = b"formXt:"
    bad = tmp_path / "broken.dat"
    bad.write_bytes(bytes(data))
    p = run_cli("trace", "report", bad, "--json")
    err = p.stderr.decode()
    assert "Traceback" not in err, err
    if need_libtracecmd() < (1, 8):
        assert p.returncode == 2, err
        assert "no field 'cookie'" in err.splitlines()[-1], err
        partial_report(p)
    else:
        assert p.returncode == 0, err
        assert err.count("\n") == 1 and "did not parse" in err, err
        d = json.loads(p.stdout)
        assert d["event_formats_not_parsed"] >= 1 and d["conserved"]
        assert d["ftrace_anomalies"]["events of a type with no event format"] > 0


def test_a_field_of_the_wrong_kind_is_one_line():
    """user_unwind_stack's ``stack`` declared a scalar in a damaged format: the field the
    stitcher iterates is a number (a TypeError traceback before); one line at the record."""
    path = DATA / "trace-typeerror-int.dat"
    err = one_line_exit_2(run_cli("trace", "report", path), path)
    assert "field 'stack' of ftrace:user_unwind_stack is declared" in err, err
    assert "where deferstitch needs an array of numbers" in err, err


@pytest.mark.parametrize("name", ["trace-segv-2.dat", "trace-segv-3.dat"])
def test_a_page_trace_cmd_itself_dies_on(name):
    """A page whose commit says 79 MB / 128 MB: trace-cmd report -N 3.1.6 dies on it (SIGSEGV in
    kbuffer_load_subbuffer); our walk finds it first, on both paths (libtracecmd never loads
    it), and says where, after what came before."""
    path = DATA / name
    for env in (None, {**os.environ, "DEFERSTITCH_ACCEL": "0"}):
        p = run_cli("trace", "report", path, "--json", env=env)
        err = one_line_exit_2(p, path)
        assert "more than a 4096-byte page has room for: damaged ring-buffer page" in err, err
        partial_report(p)
