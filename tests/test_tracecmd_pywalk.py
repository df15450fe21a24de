"""The page walker's Python twin (deferstitch/tracecmd/walk.py) against the C walker
(_tracedat.c's scan): the same good records, first record and damage (offset, text) on each CPU
of every trace.dat the tests have, damaged ones and pages damaged on purpose included.

And the tree without its C modules (copied without the .so files, so that they cannot be
imported): every command on every damaged trace.dat gives one line and exit 2, never a signal,
and what the tree with its C modules gives."""
import os
import random
import shutil
import subprocess
import sys

import pytest

import tracecmd_synth as S
from conftest import CAPTURES, DATA, ROOT, SHARED, need_built
from page_damage import damaged, each_check, pages

COMMANDS = (("report",), ("script",), ("folded",), ("flamegraph", "-o", "x.html"))


def carried():
    files = sorted(DATA.glob("*.dat")) + sorted((SHARED / "repro").glob("*.dat"))
    assert len(files) >= 14, files
    return files


def walker_built():
    from deferstitch.tracecmd import pages
    need_built("the page reader (deferstitch._tracedat)", pages.available())


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    d = tmp_path_factory.mktemp("synth")
    return [S.deferred(d / "deferred.dat"), S.deferred(d / "variant.dat", variant=True),
            S.deferred(d / "after.dat", after=True), S.userstack(d / "userstack.dat"),
            S.instances(d / "instances.dat"), S.missed_per_cpu(d / "missed.dat"),
            S.big(d / "big.dat", 0.3)]


@pytest.fixture(scope="module")
def real_v6(tmp_path_factory):
    """The real capture as an uncompressed v6 file (its pages are ours to walk), or None."""
    if shutil.which("trace-cmd") is None:
        return None
    out = tmp_path_factory.mktemp("v6") / "real-v6.dat"
    src = CAPTURES / "ftrace" / "trace-userstacktrace.dat"
    subprocess.run(["trace-cmd", "convert", "-i", str(src), "-o", str(out), "--file-version", "6",
                    "--compression", "none"], check=True, capture_output=True)
    return out


def scans(path):
    """{buffer: (C scan, Python scan)} of each buffer of path we walk; {} where it does not open
    or its header leaves nothing to walk (the same FormatError from both)."""
    from deferstitch.errors import DeferstitchError
    from deferstitch.tracecmd import pages
    from deferstitch.tracecmd.bridge import Trace
    out = {}
    try:
        t = Trace(path)
    except DeferstitchError:
        return out
    with t:
        for name, h in t.handles.items():
            try:
                c = pages.scan(h, use_c=True)
            except DeferstitchError as err:
                with pytest.raises(DeferstitchError) as py:
                    pages.scan(h, use_c=False)
                assert str(py.value) == str(err)
                continue
            out[name] = (c, pages.scan(h, use_c=False))
    return out


def same_scan(path):
    got = scans(path)
    for name, (c, py) in got.items():
        assert py == c, (path, name, c, py)
    return got


def test_python_scan_is_the_c_scan_on_every_trace_dat(synth, real_v6):
    walker_built()
    files = carried() + sorted((CAPTURES / "ftrace").glob("*.dat")) + synth
    files += [real_v6] if real_v6 else []
    files += sorted((DATA / "tracecmd-v7").glob("*.dat"))      # compressed: walked by chunks
    walked = damaged = compressed = 0
    for path in files:
        got = same_scan(path)
        for c, _py in got.values():
            walked += c is not None
            damaged += any(d is not None for _i, _n, d, _f in c or ())
        compressed += b"zstd" in path.read_bytes()[:40] and any(
            c is not None for c, _py in got.values())
    assert walked >= 10 and damaged >= 2 and compressed >= 3, (walked, damaged, compressed)


def test_python_scan_is_the_c_scan_on_each_check(synth, tmp_path):
    """Each check of the walker hit once (as test_tracecmd_pages), then bytes of the pages
    overwritten at random: the same counts, offsets and texts from both."""
    walker_built()
    path = synth[-1]
    offs = [off for _cpu, off in pages(path)]
    page = offs[len(offs) // 4]
    for name, (change, words) in each_check(page).items():
        got = same_scan(damaged(path, tmp_path, name, change))
        whys = [d[1] for c, _py in got.values() for _i, _n, d, _f in c if d is not None]
        assert any(words in w for w in whys), (name, whys)
    # a file cut inside the pages (libtracecmd does not open it): walked directly, told a
    # file size past the cut (the file cut while it is read) and one at the cut
    from deferstitch import _tracedat
    from deferstitch.tracecmd import walk
    from deferstitch.tracecmd.bridge import Trace
    with Trace(path) as t:
        h = t.handles["top"]
        head = (h.page_size, h.long_size, h.big_endian)
        layout, extents = h.common_layout, sorted(h.extents.items())
    cut = damaged(path, tmp_path, "cut", lambda d: d.__delitem__(slice(page + 100, None)))
    for size, words in ((os.path.getsize(path), "cannot be read (end of file)"),
                        (page + 100, "runs past the end of the file")):
        with open(cut, "rb") as f:
            cpus = [(i, first, n) for i, (first, n) in extents]
            c = _tracedat.Walker(f.fileno(), size, *head, layout, cpus).scan()
            py = walk.scan(f.fileno(), size, *head, layout[4], cpus)
        assert py == c, (words, c, py)
        assert any(d is not None and words in d[1] for _i, _n, d, _f in c), (words, c)
    rnd = random.Random(33)
    for i in range(60):
        src = synth[rnd.randrange(len(synth))]
        offs = [off for _cpu, off in pages(src)]

        def change(d):
            page = rnd.choice(offs)
            for _ in range(rnd.randint(1, 4)):
                at = page + rnd.randrange(0, 256 if rnd.random() < 0.7 else 4096)
                if at < len(d):
                    d[at] = rnd.choice((0, 0xFF, rnd.randrange(256), d[at] ^ 1 << rnd.randrange(8)))
        same_scan(damaged(src, tmp_path, "random-%d" % i, change))


@pytest.fixture(scope="module")
def no_c(tmp_path_factory):
    """The package copied without its C modules: `python -m deferstitch` run there cannot import
    them (the tree a machine without a compiler installs)."""
    d = tmp_path_factory.mktemp("noc")
    shutil.copytree(ROOT / "deferstitch", d / "deferstitch",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    return d


def _run(cwd, args, env=None):
    return subprocess.run([sys.executable, "-m", "deferstitch", "trace", *map(str, args)],
                          capture_output=True, cwd=cwd, timeout=600,
                          env={**os.environ, **(env or {})})


def test_without_c_the_modules_are_absent(no_c):
    p = subprocess.run([sys.executable, "-c", "from deferstitch.tracecmd import pages, engine; "
                        "import deferstitch; print(pages.available(), deferstitch.__file__)"],
                       capture_output=True, cwd=no_c, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split()[0] == "False" and p.stdout.split()[1].startswith(str(no_c)), p.stdout


def one_line(p, what):
    """Exit 0, or 2 with warnings and then one line; never a signal or a traceback."""
    assert p.returncode >= 0, (what, "signal %d" % -p.returncode)
    assert p.returncode in (0, 2), (what, p.returncode, p.stderr[-2000:])
    err = p.stderr.decode()
    assert "Traceback" not in err, (what, err)
    if p.returncode == 2:
        lines = err.splitlines()
        assert lines and all(l.startswith("deferstitch: ") for l in lines), (what, err)
        assert all(": warning: " in l for l in lines[:-1]), (what, err)
        assert ": warning: " not in lines[-1], (what, err)


def test_without_c_every_command_on_every_damaged_trace_dat(no_c, tmp_path):
    """What the tree with its C modules gives, the tree without gives: the same exit, the same
    line, the same output (the good part kept), and never a crash."""
    withc = tmp_path / "withc"
    withc.mkdir()
    for path in carried():
        for cmd in COMMANDS:
            what = (path.name,) + cmd
            for d in (no_c, withc):
                (d / "x.html").unlink(missing_ok=True)
            p = _run(no_c, (cmd[0], path) + cmd[1:])
            one_line(p, what)
            q = _run(withc, (cmd[0], path) + cmd[1:], env={"PYTHONPATH": str(ROOT)})
            one_line(q, what + ("with C",))
            assert (p.returncode, p.stderr) == (q.returncode, q.stderr), what
            assert p.stdout == q.stdout, what
            if cmd[0] == "flamegraph":
                assert (no_c / "x.html").exists() == (withc / "x.html").exists(), what
                if (withc / "x.html").exists():
                    assert (no_c / "x.html").read_bytes() == (withc / "x.html").read_bytes(), what
