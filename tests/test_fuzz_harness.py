"""The fuzz harnesses (fuzz/, ``make fuzz``) still run: their seeds are made, every seed passes
the checks of fuzz/cases.py, and the atheris harness goes once over its seeds.

The fuzzing itself is not run here (``make fuzz FUZZ_SECONDS=600`` on request); nor is the
libFuzzer build of the engine (clang, ~30 s to compile): its checks are cases.perf_case, run below.
"""
import os
import signal
import subprocess
import sys
import traceback

import pytest

from conftest import DATA, ROOT, need_built, vm_size

sys.path.insert(0, str(ROOT / "fuzz"))
import cases            # noqa: E402
import seeds            # noqa: E402


@pytest.fixture(scope="module")
def seed_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("seeds")
    assert seeds.main(["seeds.py", str(out)]) == 0
    return out


def test_trace_seeds_pass_the_checks(seed_dir):
    files = sorted((seed_dir / "trace").iterdir())
    assert len(files) >= 3                          # the synthetic files at least
    for f in files:
        rep = cases.trace_case(f.read_bytes())
        assert rep is not None and rep.samples > 0, f


DAMAGED_TRACE = sorted(DATA.glob("trace-*.dat"))


def test_damaged_trace_files_are_here():
    assert len(DAMAGED_TRACE) >= 5, "the trace.dat repros are missing from %s" % DATA


@pytest.mark.parametrize("f", DAMAGED_TRACE, ids=lambda f: f.name)
def test_damaged_trace_files_pass_the_checks(f):
    """The repros end in one-line errors now; before, they crashed the process or raised. Each in
    a child of this process (fork), so that a crash is this file's failure, not the test run's."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                    # the child: the check, and its verdict
        os.close(r)
        code, msg = 0, b""
        try:
            before = vm_size()
            cases.trace_case(f.read_bytes())
            # nothing allocated for the file stays in this process: a leaked
            # buffer is address space (no RSS), and once one mapping is past the machine's
            # memory, every later fork() of the test run is ENOMEM (CI: 74 failures after this)
            grew = vm_size() - before
            if grew >= 256 << 20:
                code, msg = 1, ("%s left %d MiB mapped in this process" % (f.name, grew >> 20)).encode()
        except BaseException:
            code, msg = 1, traceback.format_exc().encode()
        os.write(w, msg[-8000:])
        os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as pipe:
        msg = pipe.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        pytest.fail("%s: the check died of %s" % (f.name, signal.Signals(os.WTERMSIG(status)).name))
    assert os.WEXITSTATUS(status) == 0, msg


def test_perf_seeds_engine_equals_python(seed_dir, monkeypatch):
    """Every seed goes through both paths: perf_case compares nothing where the engine is absent
    or declines the file, so the comparisons are counted."""
    check_every_seed_compared(seed_dir, monkeypatch)


def test_an_engine_that_declines_a_seed_is_caught(seed_dir, monkeypatch):
    """The count can fail: an engine that hands one layout back to Python compares nothing there."""
    from deferstitch.perfdata import engine
    real = engine.unavailable
    monkeypatch.setattr(engine, "unavailable",
                        lambda perf: "declined" if len(perf.evlist.entries) > 1 else real(perf))
    with pytest.raises(AssertionError, match="the engine did not take"):
        check_every_seed_compared(seed_dir, monkeypatch)


def check_every_seed_compared(seed_dir, monkeypatch):
    from deferstitch.perfdata import engine
    need_built("the C engine (deferstitch._accel)", engine.available())
    compared = []
    real = engine.EngineRun.report

    def counted(self):
        compared.append(self)
        return real(self)
    monkeypatch.setattr(engine.EngineRun, "report", counted)
    files = sorted((seed_dir / "perf").iterdir())
    assert len(files) >= 6                          # the real captures, pipe mode, compressed
    for f in files:
        before = len(compared)
        cases.perf_case(f.read_bytes())
        taken = len(compared) - before
        assert taken == 1, "the engine did not take %s" % f.name


def test_perf_case_catches_a_differing_engine(seed_dir, monkeypatch):
    """The check can fail: an engine whose report differs from Python's is caught."""
    from deferstitch.perfdata import engine
    need_built("the C engine (deferstitch._accel)", engine.available())
    f = seed_dir / "perf" / "a_per_task.data"
    real = engine.EngineRun.report

    def off_by_one(self):
        r = real(self)
        r.lost_events += 1
        return r
    monkeypatch.setattr(engine.EngineRun, "report", off_by_one)
    with pytest.raises(AssertionError, match="engine and Python reports differ"):
        cases.perf_case(f.read_bytes())


def dwarf_reader():
    try:
        from deferstitch import _dwarf
    except ImportError:
        _dwarf = None
    need_built("the DWARF reader's C twin (deferstitch._dwarf)", _dwarf is not None)
    return _dwarf


def test_dwarf_seeds_pass_the_checks(seed_dir):
    dwarf_reader()
    files = sorted((seed_dir / "dwarf").iterdir())
    assert files and all(cases.dwarf_case(f.read_bytes()) for f in files)


def test_dwarf_case_catches_ranges_that_miss_the_address(seed_dir, monkeypatch):
    """A function handed for an address whose ranges do not hold it is a finding."""
    _dwarf = dwarf_reader()
    real, FAR = _dwarf.Reader, 1 << 40

    class Shifted:
        def __init__(self, *args):
            self.real = real(*args)

        def path(self, addr):
            hit = self.real.path(addr)
            if hit is None:
                return None
            return hit[0], [(die, [(lo + FAR, hi + FAR) for lo, hi in ranges])
                            for die, ranges in hit[1]]

        def __getattr__(self, name):
            return getattr(self.real, name)
    monkeypatch.setattr(_dwarf, "Reader", Shifted)
    f = sorted((seed_dir / "dwarf").iterdir())[0]
    with pytest.raises(AssertionError):
        cases.dwarf_case(f.read_bytes())


def test_atheris_harness_runs_over_its_seeds(seed_dir, tmp_path):
    pytest.importorskip("atheris", reason="atheris not installed: pip install atheris")
    p = subprocess.run([sys.executable, str(ROOT / "fuzz" / "fuzz_trace.py"), "-runs=0",
                        "-artifact_prefix=%s/" % tmp_path, str(seed_dir / "trace")],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "INITED" in p.stderr and "DONE" in p.stderr, p.stderr[-2000:]
    assert not list(tmp_path.iterdir())             # no crash file
