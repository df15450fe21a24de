"""What deferstitch leaves alone in a process that is not its own (perf's and trace-cmd's run
our plugins, a caller's Python our modules): the recursion limit, and glibc's mmap threshold,
which the trace reader sets only when deferstitch is the program."""
import os
import subprocess
import sys

import deferstitch
from deferstitch.symbols.demangle_rust import MAX_DEPTH, demangle_rust
from deferstitch.tracecmd import ownfile


def test_deep_rust_names_leave_the_recursion_limit_alone(monkeypatch):
    """MAX_DEPTH levels of nesting, each several print_* calls, without touching the limit."""
    def untouched(n):
        raise AssertionError("sys.setrecursionlimit(%d)" % n)
    k = MAX_DEPTH - 2
    name = "_RIC0" + "DIC1x" * k + "p" + "EEL_" * k + "E"
    monkeypatch.setattr(sys, "setrecursionlimit", untouched)
    assert demangle_rust(name) == "::<" + "dyn x<" * k + "_" + ">" * k + ">"


def test_the_allocator_is_tuned_only_by_the_program(monkeypatch):
    calls = []

    class Libc:
        def mallopt(self, *args):
            calls.append(args)
    monkeypatch.setattr(ownfile.ctypes, "CDLL", lambda name: Libc())
    monkeypatch.setattr(deferstitch, "main_program", False)
    ownfile.keep_big_blocks_mapped()
    assert calls == []
    monkeypatch.setattr(deferstitch, "main_program", True)
    ownfile.keep_big_blocks_mapped()
    assert calls == [(ownfile.M_MMAP_THRESHOLD, ownfile.MMAP_THRESHOLD)]


def test_the_command_is_the_program(tmp_path):
    """python -m deferstitch (and the deferstitch command, the same run()) says so."""
    code = ("import sys, runpy; sys.argv = ['deferstitch', '--version']\n"
            "try:\n    runpy.run_module('deferstitch', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "import deferstitch; print(deferstitch.main_program)")
    root = os.path.dirname(deferstitch.__path__[0])
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": root})
    assert p.returncode == 0 and p.stdout.split()[-1] == "True", p
