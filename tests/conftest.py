"""Where the real captures are, and helpers shared by the tests.

Real data comes from ../shared/captures (beside the checkout, as in CI) or DEFERSTITCH_SHARED;
the small captures a test needs on its own are copied into tests/data (see its README).
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
SHARED = Path(os.environ.get("DEFERSTITCH_SHARED", ROOT.parent / "shared"))
CAPTURES = SHARED / "captures"
RIG = SHARED / "rig"

# scenario -> file name, as in captures/README.md
SCENARIOS = {
    "a_per_task": "per-task.data", "b_per_task": "per-task.data", "c_per_task": "per-task.data",
    "syswide": "syswide.data", "lost_per_task": "lost.data", "pipe": "pipe.data",
    "compressed": "compressed.data", "two_events_cpu_task": "two.data",
    "baseline_fp_nodefer": "per-task.data",
}


def capture(scenario):
    """(capture path, its folder); real captures only, skipped with the reason when absent."""
    folder = CAPTURES / scenario
    path = folder / SCENARIOS[scenario]
    if not path.exists():
        local = DATA / scenario
        if (local / SCENARIOS[scenario]).exists():
            return local / SCENARIOS[scenario], local
        pytest.skip("real captures not found: put the shared folder beside the checkout "
                    "(../shared/captures) or set DEFERSTITCH_SHARED")
    return path, folder


def need_perf61():
    perf = shutil.which("perf")
    if perf is None:
        pytest.skip("perf 6.1 not installed: apt-get install linux-perf")
    out = subprocess.run([perf, "version"], capture_output=True, text=True).stdout
    return perf, out.strip()


def need_rig(name, what):
    """A script of the rig (sid-perf, sid-run): skipped with the reason when it cannot run."""
    tool = RIG / name
    if not tool.exists():
        pytest.skip("%s rig not found at %s (the shared folder)" % (what, tool))
    if os.geteuid() != 0:
        pytest.skip("the %s rig (%s) needs root for its chroot" % (what, name))
    return str(tool)


def need_sid_perf():
    return need_rig("sid-perf", "perf 7.x")


def run_cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "deferstitch", *map(str, args)],
                          capture_output=True, cwd=kw.pop("cwd", ROOT), **kw)


@pytest.fixture(scope="session")
def capture_symbols(tmp_path_factory):
    """Symbol options for the captures: their binaries where the guest had them (/opt/rig) and
    the guest's kallsyms."""
    if not (CAPTURES / "bin").exists():
        pytest.skip("real captures not found (../shared/captures)")
    root = tmp_path_factory.mktemp("symfs")
    (root / "opt" / "rig").mkdir(parents=True)
    for name in ("workload_a", "workload_b", "workload_c"):
        shutil.copy(CAPTURES / "bin" / name, root / "opt" / "rig" / name)
    return ["--symfs", str(root), "--kallsyms", str(CAPTURES / "kallsyms.xz")]
