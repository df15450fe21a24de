"""deferstitch reads a trace.dat without trace-cmd's libraries: on a machine without the
libtracecmd1 and libtraceevent1 packages every ``deferstitch trace`` command gives, on every
trace.dat of the tests, the same bytes as with them (tests/nolib_runner.py hides them), and the
C modules link neither."""
import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
import tracecmd_synth as S
from conftest import ROOT

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
REAL = DATA / "real" / "captures" / "ftrace"
COMMANDS = (("report", "--json"), ("script",), ("folded",))


def every_trace_dat(tmp):
    files = sorted(DATA.glob("*.dat")) + sorted((DATA / "tracecmd-v7").glob("*.dat"))
    for make in (S.deferred, S.userstack, S.instances, S.missed_per_cpu):
        files.append(make(tmp / (make.__name__ + ".dat")))
    files += sorted(REAL.glob("*.dat")) if REAL.is_dir() else []
    return files


def _run(commands, tmp, hide):
    todo, out = tmp / "commands.json", tmp / ("hidden.json" if hide else "plain.json")
    todo.write_text(json.dumps(commands))
    p = subprocess.run([sys.executable, str(HERE / "nolib_runner.py"), str(todo), str(out)]
                       + (["--hide"] if hide else []), capture_output=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr.decode()
    got = json.loads(out.read_text())
    return [(s, base64.b64decode(o), base64.b64decode(e)) for s, o, e in got["results"]], \
        got["loads"]


def test_every_trace_command_without_trace_cmds_libraries(tmp_path):
    files = every_trace_dat(tmp_path)
    assert len(files) >= 20
    commands = [["trace", c[0], str(f)] + list(c[1:]) for f in files for c in COMMANDS]
    plain, plain_loads = _run(commands, tmp_path, hide=False)
    hidden, hidden_loads = _run(commands, tmp_path, hide=True)
    assert plain_loads == hidden_loads == []
    for argv, a, b in zip(commands, plain, hidden):
        assert a == b, argv
        assert a[0] in (0, 2), (argv, a)
        assert b"Traceback" not in a[2], argv
        if Path(argv[2]).parent != DATA:        # not one of the damaged files: read whole
            assert a[0] == 0 and a[1], (argv, a[2])


def test_no_c_module_links_trace_cmds_libraries():
    import deferstitch
    mods = sorted(Path(deferstitch.__file__).parent.glob("_*.so"))
    if not mods:
        pytest.skip("the C modules are not built (DEFERSTITCH_NO_C or no compiler)")
    for so in mods:
        needed = subprocess.run(["ldd", str(so)], capture_output=True, text=True).stdout
        assert "tracecmd" not in needed and "traceevent" not in needed, so
