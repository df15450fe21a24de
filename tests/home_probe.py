"""Not collected by the suite: tests/test_home.py runs it in a pytest of its own, with HOME set to
a state it built, and compares what it writes. What it writes is what the suite's ways of running
things answer where the user's per-user state could name a frame: the CLI through run_cli (the
issue's `folded --symfs` command, and `script` with no --symfs, which reads the build-id cache),
an in-process Locator with its defaults, and perf 6.1 on this host (which reads ~/.debug too).

    DEFERSTITCH_HOME_PROBE=out.json python3 -m pytest -q tests/home_probe.py
"""
import json
import lzma
import os
import shutil
import subprocess

from binutils import build_id
from conftest import CAPTURES, RECORDED_LIBC, ROOT, capture, recorded_lib, run_cli
from deferstitch.symbols.locate import Locator

EXAMPLES = ROOT / "examples"


def test_probe(tmp_path):
    path, _ = capture("compressed")
    ks = ["--kallsyms", CAPTURES / "kallsyms.xz"]
    seen = {}
    r = run_cli("folded", EXAMPLES / "compressed.data", "--symfs", EXAMPLES / "symfs",
                "--kallsyms", EXAMPLES / "kallsyms.xz")
    seen["folded --symfs"] = (r.returncode, r.stdout.decode())
    r = run_cli("script", path, "-q", *ks)
    seen["script"] = (r.returncode, r.stdout.decode())
    found = Locator().locate(RECORDED_LIBC, build_id(recorded_lib(tmp_path)))
    seen["Locator()"] = found.kind
    perf = shutil.which("perf")
    if perf:
        stitched, kallsyms = tmp_path / "stitched.data", tmp_path / "kallsyms"
        kallsyms.write_bytes(lzma.decompress((CAPTURES / "kallsyms.xz").read_bytes()))
        assert run_cli("stitch", path, "-o", stitched, "-q", "--no-report").returncode == 0
        p = subprocess.run([perf, "script", "-i", str(stitched), "-F", "ip,sym,dso",
                            "--kallsyms", str(kallsyms)], capture_output=True, text=True)
        seen["perf 6.1 script"] = (p.returncode, p.stdout)
    with open(os.environ["DEFERSTITCH_HOME_PROBE"], "w") as f:
        json.dump(seen, f)
