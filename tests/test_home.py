"""No output of the suite depends on the machine's HOME. conftest.own_home gives the
session (every command it starts, every in-process lookup) an empty HOME of its own; here the
same probe of the suite's ways of running things (tests/home_probe.py) runs in a pytest of its
own twice, started with a HOME whose perf build-id cache is empty and with one that holds the
libc the captures were recorded with (as `perf record`, `perf buildid-cache` or an unpacked
`perf archive` leave it), and must answer the same."""
import json
import os
import subprocess
import sys

from binutils import build_id
from conftest import RECORDED_LIBC, ROOT, cache_build_id, recorded_lib, run_cli

EXAMPLES = ROOT / "examples"
PROBE = ROOT / "tests" / "home_probe.py"


def probe(home, out):
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(PROBE)],
                       env={**os.environ, "HOME": str(home), "DEFERSTITCH_HOME_PROBE": str(out)},
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return json.loads(out.read_text())


def test_outputs_equal_with_an_empty_debug_and_one_holding_the_recorded_lib(tmp_path):
    libc = recorded_lib(tmp_path)
    empty, full = tmp_path / "empty", tmp_path / "full"
    (empty / ".debug").mkdir(parents=True)
    cache_build_id(full / ".debug", RECORDED_LIBC, libc, build_id(libc))
    # the state is one a command reads: the command names libc's frames from it
    args = ["folded", EXAMPLES / "compressed.data", "--symfs", EXAMPLES / "symfs",
            "--kallsyms", EXAMPLES / "kallsyms.xz"]
    assert b"__mempcpy" not in run_cli(*args, "--buildid-dir", empty / ".debug").stdout
    assert b"__mempcpy" in run_cli(*args, "--buildid-dir", full / ".debug").stdout
    a, b = probe(empty, tmp_path / "empty.json"), probe(full, tmp_path / "full.json")
    assert a.keys() == b.keys() and len(a) >= 3
    for key in a:
        assert a[key] == b[key], key
