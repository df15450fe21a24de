"""Where the real captures are, and helpers shared by the tests.

Real data is in tests/data/real (captures/, external/, repro/; big files unpacked from their .xz at
the start of the session by tests/datafiles.py); the perf 7.x chroot is tools/sid-perf.
"""
import atexit
import lzma
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

import datafiles

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
SHARED = datafiles.unpack()
CAPTURES = datafiles.CAPTURES
RIG = ROOT / "tools"
# the tree `make test` was started in (its .venv's editable install points there): the run
# without the C modules works in a copy of it (DEFERSTITCH_TREE, set by the Makefile)
TREE = Path(os.environ.get("DEFERSTITCH_TREE") or ROOT)

# The machine's per-user directories, read before the session takes HOME away (own_home below):
# the rig's chroot and the tests' own downloads and builds stay where they are.
MACHINE_HOME = Path(os.path.expanduser("~"))
MACHINE_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or MACHINE_HOME / ".cache")
SID_CACHE = Path(os.environ.get("SID_CACHE") or MACHINE_CACHE / "deferstitch-rig")   # tools/sid-run's
SID_ROOTFS = SID_CACHE / "rootfs"
TEST_CACHE = MACHINE_CACHE / "deferstitch-test"    # google's pprof built from source, speedscope's schema
# toolchains the tests start, found through HOME by default: they build, they name nothing
TOOL_HOMES = {"CARGO_HOME": ".cargo", "RUSTUP_HOME": ".rustup", "PYENV_ROOT": ".pyenv",
              "NPM_CONFIG_USERCONFIG": ".npmrc", "NPM_CONFIG_CACHE": ".npm"}
# read per user by what the tests run, and able to change a name: perf's config file, the cache
# perf-archive reads, debuginfod (which fills ~/.cache/debuginfod_client from the network)
USER_STATE_VARS = ("PERF_CONFIG", "PERF_BUILDID_DIR", "DEBUGINFOD_URLS",
                   "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME")


def own_home():
    """Give this process and every command it starts an empty HOME of its own, at
    import, before any test module reads HOME: what the user recorded or cached (~/.debug,
    ~/.perfconfig, ~/.cache) then names no frame. The rig's chroot and the toolchains keep theirs."""
    for var, name in TOOL_HOMES.items():
        if var not in os.environ and (MACHINE_HOME / name).exists():
            os.environ[var] = str(MACHINE_HOME / name)
    os.environ["SID_CACHE"] = str(SID_CACHE)
    for var in USER_STATE_VARS:
        os.environ.pop(var, None)
    home, owner = tempfile.mkdtemp(prefix="deferstitch-home-"), os.getpid()
    # removed at exit by this process only, not by a child forked from it
    atexit.register(lambda: os.getpid() == owner and shutil.rmtree(home, True))
    os.environ["HOME"] = home


own_home()

# scenario -> file name, as in captures/README.md
SCENARIOS = {
    "a_per_task": "per-task.data", "b_per_task": "per-task.data", "c_per_task": "per-task.data",
    "syswide": "syswide.data", "lost_per_task": "lost.data", "pipe": "pipe.data",
    "compressed": "compressed.data", "two_events_cpu_task": "two.data",
    "baseline_fp_nodefer": "per-task.data",
}


def capture(scenario):
    """(capture path, its folder) of a real capture in tests/data/real/captures."""
    folder = CAPTURES / scenario
    return folder / SCENARIOS[scenario], folder


def need_perf61():
    perf = shutil.which("perf")
    if perf is None:
        pytest.skip("perf 6.1 not installed: apt-get install linux-perf")
    out = subprocess.run([perf, "version"], capture_output=True, text=True).stdout
    return perf, out.strip()


# The second run of `make test` (docs/testing.md): a copy of the tree without deferstitch/*.so,
# DEFERSTITCH_NO_C=1 and PYTHONPATH on the copy, so that neither pytest nor any `python -m
# deferstitch` it starts can import the C modules. The tests of the C itself skip there, counted.
NO_C = os.environ.get("DEFERSTITCH_NO_C") == "1"
C_MODULES = ("_accel", "_tracedat", "_dwarf")


def _check_no_c():
    """DEFERSTITCH_NO_C=1 promises the C modules are absent: hold the tree to it, in this process
    and in a child started elsewhere (the editable install's path must not bring them back)."""
    import deferstitch
    where = Path(deferstitch.__file__).resolve().parent
    assert where == ROOT / "deferstitch", "DEFERSTITCH_NO_C=1, but deferstitch is imported from %s" % where
    left = sorted(p.name for p in where.glob("*.so"))
    assert not left, "DEFERSTITCH_NO_C=1, but %s holds %s" % (where, left)
    probe = ("import importlib, deferstitch\n"
             "for m in %r:\n"
             "    try: importlib.import_module('deferstitch.' + m)\n"
             "    except ImportError: continue\n"
             "    raise SystemExit('deferstitch.%%s imports, from %%s' %% (m, deferstitch.__file__))\n"
             "print(deferstitch.__file__)\n" % (C_MODULES,))
    for cwd in (ROOT, "/"):
        p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd)
        assert p.returncode == 0, "DEFERSTITCH_NO_C=1: %s%s" % (p.stdout, p.stderr)
        assert Path(p.stdout.strip()).resolve().parent == where, \
            "DEFERSTITCH_NO_C=1, but a child in %s imports deferstitch from %s" % (cwd, p.stdout)


if NO_C:
    _check_no_c()


def need_built(what, built):
    """A C module of ours (the engine, the page reader): skipped only where it cannot be built
    (no compiler, no Python headers) or in the run without the C modules (DEFERSTITCH_NO_C=1);
    elsewhere its absence fails, so that the tests that use it cannot all vanish as skips."""
    if built:
        return
    if NO_C:
        pytest.skip("%s is not built here (DEFERSTITCH_NO_C=1: the run without the C modules)" % what)
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.skip("%s is not built and there is no C compiler: apt-get install gcc" % what)
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        pytest.skip("%s is not built and Python's headers are missing: apt-get install "
                    "libpython3-dev" % what)
    pytest.fail("%s is not built, though a compiler and Python's headers are here: "
                "python3 setup.py build_ext --inplace, and read its log" % what)


def need_engine(accel):
    """DEFERSTITCH_ACCEL=require wants the C engine (the run fails without it): need_built."""
    if accel == "require":
        from deferstitch.perfdata import engine
        need_built("the C engine (deferstitch._accel)", engine.available())


def need_rig(name, what):
    """tools/sid-perf or tools/sid-run (the sid chroot): skipped with the one command to run when
    it cannot run here."""
    tool = RIG / name
    if os.geteuid() != 0:
        pytest.skip("the %s chroot (tools/%s) needs root: run `sudo make test`" % (what, name))
    if not sid_built():
        pytest.skip("the %s chroot is not built: run `make test` as root (or tools/sid-perf "
                    "version, once)" % what)
    return str(tool)


def sid_built():
    return (SID_ROOTFS / ".done").exists()


def need_sid_perf():
    return need_rig("sid-perf", "perf 7.x")


def run_cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "deferstitch", *map(str, args)],
                          capture_output=True, cwd=kw.pop("cwd", ROOT), **kw)


def vm_size():
    """This process's address space in bytes (/proc/self/status): a leaked buffer that is never
    touched shows here, not in the RSS."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) << 10 for line in f if line.startswith("VmSize:"))


@pytest.fixture(scope="session")
def capture_symbols(tmp_path_factory):
    """Symbol options for the captures: their binaries where the guest had them (/opt/rig) and
    the guest's kallsyms."""
    root = tmp_path_factory.mktemp("symfs")
    (root / "opt" / "rig").mkdir(parents=True)
    for name in ("workload_a", "workload_b", "workload_c"):
        shutil.copy(CAPTURES / "bin" / name, root / "opt" / "rig" / name)
    return ["--symfs", str(root), "--kallsyms", str(CAPTURES / "kallsyms.xz")]


# The libc and ld.so the real captures (and examples/compressed.data) ran with: the rig's sid
# rootfs's, as tests/data/langs keeps them (symbol tables, build id and PLT; its README)
RECORDED_LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
RECORDED_LD = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"


def recorded_lib(work, path=RECORDED_LIBC):
    """That library (recorded at ``path``), unpacked into the folder ``work``."""
    out = Path(work) / os.path.basename(path)
    if not out.exists():
        out.write_bytes(lzma.decompress((DATA / "langs" / "symfs" / (path.lstrip("/") + ".xz")).read_bytes()))
    return out


def cache_build_id(debug, recorded, src, build_id):
    """Put ``src`` into the build-id cache ``debug`` as perf does for the file recorded at
    ``recorded`` (util/build-id.c build_id_cache__add): DEBUG/RECORDED/<id>/elf, and
    DEBUG/.build-id/xx/rest a link to its directory."""
    where = Path(debug) / recorded.lstrip("/") / build_id
    where.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, where / "elf")
    link = Path(debug) / ".build-id" / build_id[:2] / build_id[2:]
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(where, link.parent))
    return where / "elf"
