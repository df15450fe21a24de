"""deferstitch against perf 7.x on the same files: time, records/s, MB/s, peak RSS.

Usage:
    python3 bench/run.py                  # real captures, c_per_task x1/x10/x100 (file and pipe
                                          # format), the pipe capture x80/x800, 10 000 threads
    python3 bench/run.py --quick          # c_per_task x1/x10, pipe x80, 10 000 threads x 2 rounds
    python3 bench/run.py --goals          # only the issues' goal rows, interleaved, 3 rounds, the
                                          # spread and met / not met (~10 min on a quiet machine)
    python3 bench/run.py --trace          # trace.dat: deferstitch trace vs trace-cmd report -N
                                          # (bench/tracedat.py: big and varied traces, 13.5 and
                                          # 135 MiB, v6 and v7 none/zstd/zlib, 3 rounds, spread)
    python3 bench/run.py --trace --trace-only varied-13.5 --repeat 1    # a short one
    python3 bench/run.py --dwarf          # naming with inlined frames: ds folded/script against perf
                                          # 7.2 script on C++ programs with 50/200/520 MB of
                                          # .debug_info and a CPython built with -g (bench/dwarf.py;
                                          # the first run builds them, ~15 min), names checked
    python3 bench/run.py --dwarf --dwarf-only small --repeat 1            # a short one
    python3 bench/run.py --offcpu         # off-CPU time: ds folded/report --off-cpu against perf
                                          # script and perf sched timehist on the syswide off-CPU
                                          # capture (tests/data/offcpu) x1/x10/x100; folded's
                                          # totals checked (xk = k x x1's), memory x10 -> x100
    python3 bench/run.py --json out.json  # also where the JSON goes (default: CACHE/results.json)
    DEFERSTITCH_BENCH_DIR=/big/disk python3 bench/run.py   # cache dir (default ~/.cache/deferstitch-bench)

Inputs are built once with our writer (bench/build.py) into the cache dir, outside the checkout,
and reused while bench/build.py is unchanged. Every command runs as a child process from that
directory (sid-perf only sees the current directory), stdout to /dev/null, its wall time taken
around the child and its peak RSS from wait4() (ru_maxrss: the largest process of the child's
tree, so sid-perf's chroot wrapper does not hide perf), with its CPU time (user + sys of the
tree). Times are the best of --repeat runs (default 1); the page cache is warmed by `cat` first,
so `cat` is the I/O floor and `cp` the floor of writing a copy.

    deferstitch stitch F -o out.data   deferstitch folded F   deferstitch report F --json
    deferstitch script F (perf script's text)   deferstitch export F --format pprof
    and stitch, folded with DEFERSTITCH_ACCEL=0 (the Python path)
    deferstitch folded F --symfs S --kallsyms K [--no-inline [--no-demangle]]   (named, with and
        without inlined frames and demangling; also on cpp x10, tests/data/langs/cpp replicated)
    perf script -i F (merged)          perf script -F tid,time,ip -i F      perf inject -i F -o inj.data
    on pipe-format inputs also: cat F | deferstitch folded|stitch|script -   (standard input)

The inputs are the real captures of tests/data/real. perf 7.x is tools/sid-perf; without it (or not root)
only our side and cat are measured. Nothing here asserts a time.
"""
import argparse
import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

import build                                           # noqa: E402
import datafiles                                       # noqa: E402  (tests/datafiles.py)
from deferstitch.abi import consts as C                # noqa: E402
from deferstitch.perfdata.reader import PerfData       # noqa: E402

CAPTURES = datafiles.CAPTURES
SID_PERF = ROOT / "tools" / "sid-perf"
TIME = shutil.which("time", path="/usr/bin:/bin") or "/usr/bin/time"
CACHE = Path(os.environ.get("DEFERSTITCH_BENCH_DIR", Path.home() / ".cache" / "deferstitch-bench"))
SYMFS = CACHE / "symfs"     # the captures' binaries at their guest paths (prepare())
LANGS = ROOT / "tests" / "data" / "langs"
LANGS_SYMFS = CACHE / "langs-symfs"     # tests/data/langs/symfs unpacked (make_langs())
OUT = "bench-"              # what the commands write in CACHE (--goals: this run's own names)
REAL = ["a_per_task", "b_per_task", "c_per_task", "syswide", "lost_per_task", "pipe", "compressed",
        "two_events_cpu_task", "baseline_fp_nodefer"]
OFFCPU = ROOT / "tests" / "data" / "offcpu"
OFFCPU_SYMFS = CACHE / "offcpu-symfs"   # tests/data/offcpu/symfs unpacked (offcpu_inputs())
FILES = {"syswide": "syswide.data", "lost_per_task": "lost.data", "pipe": "pipe.data",
         "compressed": "compressed.data", "two_events_cpu_task": "two.data"}


def tools(have_perf, group):
    """[(name, argv of file)] for an input of ``group`` ("pipe": a pipe-format file, also fed
    through standard input)."""
    py = [sys.executable, "-m", "deferstitch"]
    pipe = group == "pipe"
    out = [("cat", lambda f: ["cat", f]),
           ("cp", lambda f: ["cp", f, OUT + "cp.data"]),
           ("ds stitch", lambda f: py + ["stitch", f, "-q", "-o", OUT + "out.data"]),
           ("ds folded", lambda f: py + ["folded", f, "-q", "-o", os.devnull]),
           ("ds report", lambda f: py + ["report", f, "-q", "--json"]),
           ("ds script", lambda f: py + ["script", f, "-q", "-o", os.devnull]),
           ("ds pprof", lambda f: py + ["export", f, "--format", "pprof", "-q", "-o", OUT + "out.pb.gz"])]
    if group not in ("pipe", "threads"):    # with a selection (percent slices need the header's
        # sample times: a pipe has none, nor the synthetic threads file)
        out.insert(4, ("ds folded --time", lambda f: py + ["folded", f, "-q", "-o", os.devnull,
                                                           "--time", "5%-95%"]))
    if pipe:        # the same through a real pipe: what `perf record -o - | deferstitch ... -` gets
        cmd = " ".join(py)
        out += [("ds %s (stdin)" % c, (lambda c, rest: lambda f: ["sh", "-c", "cat '%s' | %s %s - -q %s"
                                                                  % (f, cmd, c, rest)])(c, rest))
                for c, rest in (("stitch", "-o %sout.data" % OUT), ("folded", "-o /dev/null"),
                                ("script", "-o /dev/null"))]
    elif group == "langs":      # a C++ program: names demangled, inlined frames from its DWARF
        named = ["--symfs", str(LANGS_SYMFS), "--kallsyms", str(LANGS / "kallsyms.xz")]
        out = [(t, a) for t, a in out if t in ("cat", "ds folded")]
    if group != "pipe":
        named = named if group == "langs" else ["--symfs", str(SYMFS), "--kallsyms",
                                                str(CAPTURES / "kallsyms.xz")]
        out += [("ds folded named", lambda f: py + ["folded", f, "-q", "-o", os.devnull] + named),
                ("ds folded named --no-inline",
                 lambda f: py + ["folded", f, "-q", "-o", os.devnull, "--no-inline"] + named),
                ("ds folded named --no-inline --no-demangle",
                 lambda f: py + ["folded", f, "-q", "-o", os.devnull, "--no-inline", "--no-demangle"] + named)]
    if group not in ("pipe", "langs"):      # the Python path (perf's embedded Python, DEFERSTITCH_ACCEL=0)
        slow = ["env", "DEFERSTITCH_ACCEL=0"] + py
        out += [("ds stitch (Python path)", lambda f: slow + ["stitch", f, "-q", "-o", OUT + "out.data"]),
                ("ds folded (Python path)", lambda f: slow + ["folded", f, "-q", "-o", os.devnull])]
    if have_perf and group != "langs":
        sp = str(SID_PERF)
        out += [("perf script", lambda f: [sp, "script", "-i", f])]
        if not pipe:
            out += [("perf script -F tid,time,ip", lambda f: [sp, "script", "-F", "tid,time,ip", "-i", f]),
                    ("perf inject", lambda f: [sp, "inject", "-i", f, "-o", OUT + "inj.data"])]
    return out


def measure(argv, cwd, timeout):
    """(seconds, peak RSS KiB, CPU seconds, status) of one child run, through /usr/bin/time.

    GNU time's %M is its child's ru_maxrss from wait4(): the largest process of the child's
    tree, so sid-perf's chroot wrapper does not hide perf. (wait4 on our own child would count
    the forked Python parent's pages before exec.)"""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    rss_file = os.path.join(cwd, OUT + "rss.txt")
    os.sync()       # no write-back pending from the run before (not timed): `cp` over its last
    # copy took 0.04 s or 0.2-0.4 s on x10 depending on it, and the outputs' renames too
    errf = open(os.path.join(cwd, OUT + "stderr.txt"), "w+b")
    t0 = time.perf_counter()
    p = subprocess.Popen([TIME, "-f", "%M %U %S", "-o", rss_file] + argv, cwd=cwd,
                         stdout=subprocess.DEVNULL, stderr=errf, env=env)
    # wait() without a timeout blocks in waitpid (Popen.wait(timeout) polls every 50 ms, too
    # coarse for the small captures); a timer kills a run that takes too long
    killer = threading.Timer(timeout, p.kill)
    killer.start()
    p.wait()
    dt = time.perf_counter() - t0
    killer.cancel()
    if p.returncode == -signal.SIGKILL and dt >= timeout:
        return None, None, None, "timeout"
    try:
        words = open(rss_file).read().split()[-3:]
        rss, cpu = int(words[0]), float(words[1]) + float(words[2])
    except (OSError, ValueError, IndexError):
        rss = cpu = None
    if p.returncode != 0:
        errf.seek(0)
        last = errf.read().decode(errors="replace").strip().splitlines()[-1:]
        return dt, rss, cpu, "rc=%d %s" % (p.returncode, last[0] if last else "")
    return dt, rss, cpu, "ok"


def count_records(path):
    """(records, samples) as our reader sees them (COMPRESSED contents counted, not containers)."""
    n = samples = 0
    with PerfData.open(str(path)) as perf:
        for rec in perf.records():
            if rec.type in (C.PERF_RECORD_COMPRESSED, C.PERF_RECORD_COMPRESSED2):
                continue
            n += 1
            samples += rec.type == C.PERF_RECORD_SAMPLE
    return n, samples


def cache_meta():
    """(path, dict) of CACHE/inputs.json: what was built, forgotten when bench/build.py changes."""
    CACHE.mkdir(parents=True, exist_ok=True)
    stamp = hashlib.sha1(Path(build.__file__).read_bytes()).hexdigest()[:10]
    meta_path = CACHE / "inputs.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    if meta.get("stamp") != stamp:
        meta = {"stamp": stamp, "files": {}}
    return meta_path, meta


def prepare(quick):
    """[(label, file name in CACHE, group)], building what the cache lacks."""
    meta_path, meta = cache_meta()
    inputs = []
    datafiles.unpack()
    c_src = CAPTURES / "c_per_task" / "per-task.data"
    make_symfs()
    real = ["c_per_task"] if quick else REAL
    for sc in real:
        src = CAPTURES / sc / FILES.get(sc, "per-task.data")
        name = "real-%s.data" % sc
        if not (CACHE / name).exists() or (CACHE / name).stat().st_size != src.stat().st_size:
            shutil.copy(src, CACHE / name)
        inputs.append(("%s x1" % sc, name, "real"))
    p_src = CAPTURES / "pipe" / "pipe.data"
    scaled = [(c_src, "c_per_task", k, pipe) for k in ((10,) if quick else (10, 100)) for pipe in (False, True)]
    scaled += [(p_src, "pipe", k, True) for k in ((80,) if quick else (80, 800))]
    for src, what, k, pipe in scaled:
        name = built(meta, src, what, k, pipe)
        inputs.append(("%s x%d%s" % (what, k, " pipe format" if pipe and what != "pipe" else ""), name,
                       "pipe" if pipe else "scale"))
    inputs.append(("cpp x10", built(meta, make_langs(), "cpp", 10, False), "langs"))
    rounds = 2 if quick else 10
    name = "threads-10000x%d.data" % rounds
    if name not in meta["files"] or not (CACHE / name).exists():
        build.threads(10000, rounds, CACHE / name)
        meta["files"][name] = None
    inputs.append(("10000 threads pending x%d rounds" % rounds, name, "threads"))
    for _label, name, _g in inputs:
        if not meta["files"].get(name) or meta["files"][name][2] != (CACHE / name).stat().st_size:
            meta["files"][name] = list(count_records(CACHE / name)) + [(CACHE / name).stat().st_size]
    meta_path.write_text(json.dumps(meta, indent=1))
    return [(label, name, g, meta["files"][name]) for label, name, g in inputs]


def make_symfs():
    """SYMFS: the captures' binaries where the guest had them (/opt/rig)."""
    (SYMFS / "opt" / "rig").mkdir(parents=True, exist_ok=True)
    for name in ("workload_a", "workload_b", "workload_c"):
        shutil.copy(CAPTURES / "bin" / name, SYMFS / "opt" / "rig" / name)


def make_langs():
    """LANGS_SYMFS and the C++ capture unpacked into CACHE: the source of "cpp x10"."""
    import lzma
    for packed in (LANGS / "symfs").rglob("*.xz"):
        out = LANGS_SYMFS / packed.relative_to(LANGS / "symfs").with_suffix("")
        if not out.exists():
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(lzma.decompress(packed.read_bytes()))
    src = CACHE / "langs-cpp.data"
    if not src.exists():
        src.write_bytes(lzma.decompress((LANGS / "cpp" / "per-task.data.xz").read_bytes()))
    return src


def built(meta, src, what, k, pipe):
    """The name in CACHE of ``src`` replicated ``k`` times (pipe format or not), built if missing."""
    name = "%s-x%d%s.data" % (what, k, ".pipe" if pipe else "")
    if name not in meta["files"] or not (CACHE / name).exists():
        t0 = time.perf_counter()
        print("bench: building %s ..." % name, file=sys.stderr, flush=True)
        build.replicate(src, k, CACHE / name, pipe=pipe)
        print("bench: built %s in %.1f s" % (name, time.perf_counter() - t0), file=sys.stderr)
        meta["files"][name] = None
    return name


def have_sid_perf():
    if not SID_PERF.exists() or os.geteuid() != 0:
        return False
    try:
        return subprocess.run([str(SID_PERF), "version"], capture_output=True, timeout=300).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def fmt_table(rows, head):
    w = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    line = lambda r: "  ".join(str(c).rjust(w[i]) if i > 1 else str(c).ljust(w[i]) for i, c in enumerate(r))
    return "\n".join([line(head), "  ".join("-" * x for x in w)] + [line(r) for r in rows])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small inputs, about a minute")
    ap.add_argument("--repeat", type=int, help="runs per measurement, best kept (default 1; "
                    "--goals: rounds, default 3)")
    ap.add_argument("--json", help="write results here too (default: CACHE/results.json)")
    ap.add_argument("--no-perf", action="store_true", help="measure deferstitch and cat only")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run at most")
    ap.add_argument("--goals", action="store_true",
                    help="only the goal rows, interleaved (--repeat rounds): spread, met or not")
    ap.add_argument("--trace", action="store_true",
                    help="the trace.dat rows against trace-cmd report -N (bench/tracedat.py)")
    ap.add_argument("--trace-only", metavar="WORDS",
                    help="--trace: only the files whose name KIND-MIB-FORMAT holds one of these "
                    "comma-separated words (big, varied-13.5, zstd, ...)")
    ap.add_argument("--dwarf", action="store_true",
                    help="naming with inlined frames against perf 7.2 script at real size (bench/dwarf.py)")
    ap.add_argument("--dwarf-only", metavar="WORDS",
                    help="--dwarf: only the inputs whose name (small, medium, large, python) holds one of "
                    "these comma-separated words")
    ap.add_argument("--dwarf-perf-only", metavar="WORDS",
                    help="--dwarf: on these inputs only perf 7.2's row")
    ap.add_argument("--offcpu", action="store_true",
                    help="only the off-CPU rows: folded/report --off-cpu against perf script and "
                    "perf sched timehist on tests/data/offcpu's syswide capture x1/x10/x100")
    args = ap.parse_args(argv)
    if args.offcpu:
        return offcpu(args)
    if args.dwarf:
        import dwarf
        CACHE.mkdir(parents=True, exist_ok=True)
        return dwarf.main(args, measure, spread, fmt_table, CACHE)
    if args.goals:
        return goals(args)
    if args.trace:
        import tracedat
        CACHE.mkdir(parents=True, exist_ok=True)
        return tracedat.main(args, measure, spread, fmt_table, CACHE)
    args.repeat = args.repeat or 1

    have_perf = not args.no_perf and have_sid_perf()
    # byte-compile the package first, as pip does on install: an editable checkout under
    # PYTHONDONTWRITEBYTECODE would otherwise compile every module on every run
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "deferstitch")], check=True)
    from deferstitch.perfdata import engine
    if not engine.available():
        print("bench: the C engine is not built (pip install -e .): ds stitch/folded/report "
              "measure the Python path", file=sys.stderr)
    inputs = prepare(args.quick)
    results = []
    for label, name, group, (nrec, nsamp, size) in inputs:
        subprocess.run(["cat", name], cwd=CACHE, stdout=subprocess.DEVNULL)     # warm the cache
        for tool, mk in tools(have_perf, group):
            best = None
            for _ in range(args.repeat):
                dt, rss, cpu, status = measure(mk(name), str(CACHE), args.timeout)
                if status != "ok":
                    best = (dt, rss, cpu, status)
                    break
                if best is None or dt < best[0]:
                    best = (dt, rss, cpu, status)
            dt, rss, cpu, status = best
            r = {"input": label, "file": name, "group": group, "tool": tool, "records": nrec,
                 "samples": nsamp, "bytes": size, "seconds": dt, "cpu_seconds": cpu,
                 "peak_rss_kib": rss, "status": status,
                 "records_per_s": nrec / dt if dt else None, "mb_per_s": size / 1e6 / dt if dt else None}
            results.append(r)
            print("bench: %-34s %-28s %8s s  %s" % (label, tool, "%.2f" % dt if dt else "-", status),
                  file=sys.stderr, flush=True)
    by = {(r["input"], r["tool"]): r for r in results}
    for r in results:
        ps = by.get((r["input"], "perf script"))
        r["vs_perf_script"] = (ps["seconds"] / r["seconds"]) if ps and ps["seconds"] and r["seconds"] else None
    rows = []
    for r in results:
        rows.append([r["input"], r["tool"], "%.2f" % r["seconds"] if r["seconds"] else r["status"],
                     "%.2f" % r["cpu_seconds"] if r["cpu_seconds"] is not None else "-",
                     "%.0f" % (r["records_per_s"] / 1e3) if r["records_per_s"] else "-",
                     "%.1f" % r["mb_per_s"] if r["mb_per_s"] else "-",
                     "%.0f" % (r["peak_rss_kib"] / 1024) if r["peak_rss_kib"] else "-",
                     "%.2f" % r["vs_perf_script"] if r["vs_perf_script"] else "-",
                     "" if r["status"] == "ok" else r["status"][:40]])
    print(fmt_table(rows, ["input", "tool", "s", "cpu s", "k rec/s", "MB/s", "RSS MB", "perf script s / s", "note"]))

    # Memory across sizes: c_per_task x1, x10, x100 (the same program, more of it).
    scale = [l for l, _n, g, _m in inputs if l.startswith("c_per_task x") and g != "pipe"]
    mem = []
    for tool, _mk in tools(have_perf, "scale"):
        cells = [by[(l, tool)]["peak_rss_kib"] for l in scale if (l, tool) in by]
        if cells and all(cells):
            mem.append([tool, ""] + ["%.0f" % (c / 1024) for c in cells]
                       + ["%.2f" % (cells[-1] / cells[0])])
    print()
    print(fmt_table(mem, ["peak RSS MB", ""] + scale + ["last / x1"]))
    summary = targets(by, scale, inputs)
    print()
    for line in summary:
        print(line)
    doc = {"host": {"python": sys.version.split()[0], "machine": platform.machine(),
                    "cpus": os.cpu_count(), "kernel": platform.release(),
                    "cpu": _cpu_model()},
           "perf": _perf_version() if have_perf else None, "quick": args.quick,
           "engine": engine.available(),
           "results": results, "targets": summary}
    out = Path(args.json) if args.json else CACHE / "results.json"
    out.write_text(json.dumps(doc, indent=1))
    print("\nbench: JSON in %s" % out)
    clean_up()
    return 0


def clean_up():
    """Remove what the commands wrote in CACHE (OUT's names)."""
    for junk in ("out.data", "inj.data", "cp.data", "out.pb.gz", "stderr.txt", "rss.txt"):
        try:
            (CACHE / (OUT + junk)).unlink()
        except OSError:
            pass


def targets(by, scale, inputs):
    """The issue's targets, as measured (said, not asserted)."""
    out = []
    big = scale[-1] if scale else None

    def ratio(inp, a, b):
        ra, rb = by.get((inp, a)), by.get((inp, b))
        if ra and rb and ra["seconds"] and rb["seconds"]:
            return rb["seconds"] / ra["seconds"]
        return None
    for inp in scale[1:]:
        x = ratio(inp, "ds folded", "perf script")
        if x is not None:
            out.append("target folded 8x faster than perf script (%s): %.2fx" % (inp, x))
        x = ratio(inp, "cp", "ds stitch")
        if x is not None:
            out.append("target stitch within 2x of cp (%s): %.2fx cp's time" % (inp, x))
    for inp in [l for l, _n, g, _m in inputs if g == "pipe"]:
        for tool in ("ds folded", "ds stitch", "ds script"):
            x = ratio(inp, tool, tool + " (stdin)")
            if x is not None:
                out.append("target standard input within 1.3x of the file (%s, %s): %.2fx" % (inp, tool, x))
    for inp in scale[1:] + ["cpp x10"]:
        x = ratio(inp, "ds folded named --no-inline --no-demangle", "ds folded named")
        if x is not None:
            out.append("target folded demangled with inlined frames within 1.5x of --no-inline "
                       "--no-demangle (%s): %.2fx" % (inp, x))
    for inp in [l for l, _n, g, _m in inputs if g not in ("langs", "pipe", "threads")]:
        x = ratio(inp, "ds folded", "ds folded --time")
        if x is not None:
            out.append("target folded with a selection (--time 5%%-95%%) within 1.1x of folded "
                       "(%s): %.2fx" % (inp, x))
    for inp in [l for l, _n, g, _m in inputs if g in ("scale", "pipe")]:
        x = ratio(inp, "ds folded", "ds pprof")
        if x is not None:
            out.append("target pprof within 1.5x of folded (%s): %.2fx" % (inp, x))
    if big:
        st = by.get((big, "ds stitch"))
        if st and st["records_per_s"]:
            out.append("stitch records/s (%s): %.0f k records/s" % (big, st["records_per_s"] / 1e3))
        for tool in ("ds stitch", "ds folded", "ds report"):
            a, b = by.get((scale[0], tool)), by.get((big, tool))
            if a and b and a["peak_rss_kib"] and b["peak_rss_kib"]:
                out.append("target flat RSS %s: %s %.0f MB -> %s %.0f MB (x%.2f)" % (
                    tool, scale[0], a["peak_rss_kib"] / 1024, big, b["peak_rss_kib"] / 1024,
                    b["peak_rss_kib"] / a["peak_rss_kib"]))
    th = [l for l, _n, g, _m in inputs if g == "threads"]
    for inp in th:
        for tool in ("ds report", "ds stitch"):
            x = ratio(inp, tool, "perf script")
            if x is not None:
                out.append("target 10000 pending >= 10x faster than perf's merge (%s vs perf script): %.2fx"
                           % (tool, x))
    return out


def offcpu_tools(have_perf):
    """[(name, argv of file)] of the off-CPU rows. The folded rows write their output (in CACHE,
    OUT's names) for offcpu_check()."""
    py = [sys.executable, "-m", "deferstitch"]
    named = ["--symfs", str(OFFCPU_SYMFS), "--kallsyms", str(OFFCPU / "kallsyms.xz")]
    out = [("cat", lambda f: ["cat", f]),
           ("ds folded --off-cpu", lambda f: py + ["folded", f, "--off-cpu", "-q", "-o",
                                                   OUT + "offcpu-named.folded"] + named),
           ("ds folded --off-cpu --no-symbols",
            lambda f: py + ["folded", f, "--off-cpu", "-q", "--no-symbols", "-o", OUT + "offcpu.folded"]),
           ("ds report --off-cpu", lambda f: py + ["report", f, "--off-cpu", "-q", "--json"])]
    if have_perf:
        sp = str(SID_PERF)
        out += [("perf script", lambda f: [sp, "script", "-i", f]),
                ("perf sched timehist", lambda f: [sp, "sched", "timehist", "-i", f])]
    return out


def offcpu_inputs(quick):
    """[(label, file in CACHE, k)]: the syswide off-CPU capture unpacked into CACHE (x1) and
    replicated (build.replicate: tids, times and the sched_switch pids shifted by copy)."""
    import lzma
    meta_path, meta = cache_meta()
    for packed in (OFFCPU / "symfs").rglob("*.xz"):
        dst = OFFCPU_SYMFS / packed.relative_to(OFFCPU / "symfs").with_suffix("")
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(lzma.decompress(packed.read_bytes()))
    src = CACHE / "offcpu-syswide.data"
    if not src.exists():
        src.write_bytes(lzma.decompress((OFFCPU / "syswide" / "syswide.data.xz").read_bytes()))
    out = [("offcpu syswide x1", src.name, 1)]
    for k in (10,) if quick else (10, 100):
        out.append(("offcpu syswide x%d" % k, built(meta, src, "offcpu-syswide", k, False), k))
    for _label, name, _k in out:
        if not meta["files"].get(name) or meta["files"][name][2] != (CACHE / name).stat().st_size:
            meta["files"][name] = list(count_records(CACHE / name)) + [(CACHE / name).stat().st_size]
    meta_path.write_text(json.dumps(meta, indent=1))
    return [(label, name, k, meta["files"][name]) for label, name, k in out]


def _folded(path):
    """{stack: weight} of a folded file."""
    out = {}
    for line in open(path):
        stack, _sp, w = line.rstrip("\n").rpartition(" ")
        out[stack] = out.get(stack, 0) + int(w)
    return out


def offcpu_check(outputs):
    """Lines saying whether each xk's folded --off-cpu is x1's with every weight times k (the
    copies are the same run by other tids, the comms the same: the lines must be too)."""
    lines = []
    for tool, by_k in outputs.items():
        if 1 not in by_k:
            continue
        one = by_k[1]
        for k, got in sorted(by_k.items()):
            if k == 1:
                continue
            want = {s: w * k for s, w in one.items()}
            if got == want:
                lines.append("check %s x%d: %d stacks, each x1's weight x %d: equal" % (tool, k, len(got), k))
            else:
                diff = sorted(set(got) ^ set(want)) + [s for s in got if s in want and got[s] != want[s]]
                lines.append("check %s x%d: NOT x1 x %d (%d stacks differ, total %d vs %d ns)"
                             % (tool, k, k, len(diff), sum(got.values()), sum(want.values())))
    return lines


def offcpu(args):
    """The off-CPU rows: time and peak RSS of ds folded/report --off-cpu, perf script and perf
    sched timehist on the syswide off-CPU capture x1/x10/x100, folded's totals checked against
    x1's, memory x10 -> x100."""
    global OUT
    OUT = "bench-%d-" % os.getpid()           # other runs may share the cache dir
    repeat = args.repeat or 1
    have_perf = not args.no_perf and have_sid_perf()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "deferstitch")], check=True)
    inputs = offcpu_inputs(args.quick)
    results, outputs = [], {}
    try:
        for label, name, k, (nrec, nsamp, size) in inputs:
            subprocess.run(["cat", name], cwd=CACHE, stdout=subprocess.DEVNULL)     # warm the cache
            for tool, mk in offcpu_tools(have_perf):
                best = None
                for _ in range(repeat):
                    dt, rss, cpu, status = measure(mk(name), str(CACHE), args.timeout)
                    if status != "ok":
                        best = (dt, rss, cpu, status)
                        break
                    if best is None or dt < best[0]:
                        best = (dt, rss, cpu, status)
                dt, rss, cpu, status = best
                argv = mk(name)
                if status == "ok" and "-o" in argv and argv[argv.index("-o") + 1] != os.devnull:
                    outputs.setdefault(tool, {})[k] = _folded(CACHE / argv[argv.index("-o") + 1])
                results.append({"input": label, "file": name, "tool": tool, "records": nrec,
                                "samples": nsamp, "bytes": size, "seconds": dt, "cpu_seconds": cpu,
                                "peak_rss_kib": rss, "status": status})
                print("bench: %-20s %-34s %8s s  %s" % (label, tool, "%.2f" % dt if dt else "-", status),
                      file=sys.stderr, flush=True)
    finally:
        for junk in ("offcpu-named.folded", "offcpu.folded", "stderr.txt", "rss.txt"):
            try:
                (CACHE / (OUT + junk)).unlink()
            except OSError:
                pass
    by = {(r["input"], r["tool"]): r for r in results}
    rows = []
    for r in results:
        ps = by.get((r["input"], "perf script"))
        r["vs_perf_script"] = ps["seconds"] / r["seconds"] if ps and ps["seconds"] and r["seconds"] else None
        rows.append([r["input"], r["tool"], "%.2f" % r["seconds"] if r["seconds"] else r["status"],
                     "%.2f" % r["cpu_seconds"] if r["cpu_seconds"] is not None else "-",
                     "%.0f" % (r["peak_rss_kib"] / 1024) if r["peak_rss_kib"] else "-",
                     "%.2f" % r["vs_perf_script"] if r["vs_perf_script"] else "-",
                     "" if r["status"] == "ok" else r["status"][:40]])
    print(fmt_table(rows, ["input", "tool", "s", "cpu s", "RSS MB", "perf script s / s", "note"]))
    lines = offcpu_check(outputs)
    scale = [label for label, _n, k, _m in inputs if k > 1]
    for tool, _mk in offcpu_tools(have_perf):
        a, b = by.get((scale[0], tool)), by.get((scale[-1], tool))
        if len(scale) > 1 and a and b and a["peak_rss_kib"] and b["peak_rss_kib"]:
            ma, mb = a["peak_rss_kib"] / 1024, b["peak_rss_kib"] / 1024
            lines.append("%-8s memory flat %s -> %s (<= 1.25x), %s: %.0f -> %.0f MB (%.2fx)" % (
                "MET" if mb <= 1.25 * ma else "NOT MET", scale[0].split()[-1], scale[-1].split()[-1],
                tool, ma, mb, mb / ma))
    print()
    for line in lines:
        print(line)
    doc = {"host": {"python": sys.version.split()[0], "machine": platform.machine(),
                    "cpus": os.cpu_count(), "kernel": platform.release(), "cpu": _cpu_model(),
                    "load": os.getloadavg()},
           "perf": _perf_version() if have_perf else None, "repeat": repeat,
           "results": results, "checks": lines}
    out = Path(args.json) if args.json else CACHE / "offcpu.json"
    out.write_text(json.dumps(doc, indent=1))
    print("\nbench: JSON in %s" % out)
    return 0


def goal_inputs():
    """[(label, file in CACHE, tools)] of the goal rows, built where the cache lacks them."""
    meta_path, meta = cache_meta()
    c_src, p_src = CAPTURES / "c_per_task" / "per-task.data", CAPTURES / "pipe" / "pipe.data"
    datafiles.unpack()
    stdin = ["ds folded", "ds folded (stdin)", "ds stitch", "ds stitch (stdin)", "ds script", "ds script (stdin)"]
    make_symfs()
    out = []
    for k in (10, 100):
        out.append(("c_per_task x%d" % k, built(meta, c_src, "c_per_task", k, False),
                    ["cp", "ds stitch", "ds folded", "ds pprof", "perf script", "ds folded named",
                     "ds folded named --no-inline", "ds folded named --no-inline --no-demangle"]))
        out.append(("c_per_task x%d pipe format" % k, built(meta, c_src, "c_per_task", k, True), stdin))
    out.append(("pipe x80", built(meta, p_src, "pipe", 80, True), stdin + ["ds pprof"]))
    out.append(("cpp x10", built(meta, make_langs(), "cpp", 10, False),
                ["ds folded named", "ds folded named --no-inline --no-demangle"]))
    meta_path.write_text(json.dumps(meta, indent=1))
    return out


def spread(values):
    """(min, median, max) of a list of numbers."""
    v = sorted(values)
    return v[0], v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2, v[-1]


SLOW = 60           # --goals: seconds; a row slower than this in round 1 is not repeated


def goals(args):
    """The issues' goals only: every row once per round, rounds interleaved (a busy neighbour
    slows every row of a round, not one tool), ratios taken within a round, then their spread."""
    global OUT
    OUT = "bench-%d-" % os.getpid()           # other runs may share the cache dir
    rounds = args.repeat or 3
    have_perf = not args.no_perf and have_sid_perf()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "deferstitch")], check=True)
    from deferstitch.perfdata import engine
    if not engine.available():
        print("bench: the C engine is not built (pip install -e .)", file=sys.stderr)
    rows = []
    for label, name, wanted in goal_inputs():
        subprocess.run(["cat", name], cwd=CACHE, stdout=subprocess.DEVNULL)     # warm the cache
        argv = dict(tools(have_perf, "pipe" if ".pipe." in name else "langs" if label.startswith("cpp")
                          else "scale"))
        rows += [(label, name, tool, argv[tool]) for tool in wanted if tool in argv]
    runs = {}               # (input, tool) -> [(wall, cpu, rss)] by round
    t0 = time.perf_counter()
    try:
        for r in range(rounds):
            for label, name, tool, mk in rows:
                if r and runs[(label, tool)][0][0] > SLOW:
                    continue            # (one round of a row this slow says enough, and keeps to ~10 min)
                dt, rss, cpu, status = measure(mk(name), str(CACHE), args.timeout)
                if status != "ok":
                    raise SystemExit("bench: %s on %s: %s" % (tool, label, status))
                runs.setdefault((label, tool), []).append((dt, cpu, rss))
                print("bench: round %d/%d  %-28s %-20s %7.2f s" % (r + 1, rounds, label, tool, dt),
                      file=sys.stderr, flush=True)
            print("bench: round %d done after %.0f s" % (r + 1, time.perf_counter() - t0), file=sys.stderr)
    finally:
        clean_up()
    table = []
    for (label, tool), rs in runs.items():
        lo, med, hi = spread([w for w, _c, _m in rs])
        table.append([label, tool, "%.2f" % lo, "%.2f" % med, "%.2f" % hi,
                      "%.2f" % spread([c for _w, c, _m in rs])[1], "%.0f" % (max(m for _w, _c, m in rs) / 1024)])
    print(fmt_table(table, ["input", "tool", "min s", "median s", "max s", "cpu s (median)", "RSS MB (max)"]))
    print("\n%d rounds, interleaved (rows over %d s once); ratios per round, median [min-max]:" % (rounds, SLOW))
    lines = goal_lines(runs)
    for line in lines:
        print(line)
    doc = {"host": {"python": sys.version.split()[0], "cpus": os.cpu_count(), "cpu": _cpu_model(),
                    "kernel": platform.release(), "load": os.getloadavg()},
           "perf": _perf_version() if have_perf else None, "rounds": rounds,
           "runs": [{"input": l, "tool": t, "wall": [x[0] for x in rs], "cpu": [x[1] for x in rs],
                     "peak_rss_kib": [x[2] for x in rs]} for (l, t), rs in runs.items()],
           "goals": lines}
    out = Path(args.json) if args.json else CACHE / "goals.json"
    out.write_text(json.dumps(doc, indent=1))
    print("\nbench: JSON in %s" % out)
    return 0


def goal_lines(runs):
    """'MET' / 'NOT MET' lines of the goals, on the median of per-round ratios (stitch against
    cp: best against best)."""
    out = []

    def ratio(label, a, b, field=0):
        """b / a per round (None: a row missing)."""
        ra, rb = runs.get((label, a)), runs.get((label, b))
        if not ra or not rb:
            return None
        return [y[field] / x[field] for x, y in zip(ra, rb) if x[field] and y[field]]   # (zip: rounds both ran)

    def say(ok, text, rs, unit="x"):
        lo, med, hi = spread(rs)
        out.append("%-8s %s: %.2f%s [%.2f-%.2f]" % ("MET" if ok(med) else "NOT MET", text, med, unit, lo, hi))
    for k in (10, 100):
        c = "c_per_task x%d" % k
        rs = ratio(c, "ds folded", "perf script")
        if rs:
            say(lambda x: x >= 8, "folded >= 8x faster than perf script, %s (wall, start-up included)" % c, rs)
        rs = ratio(c, "cp", "ds stitch")
        if rs:      # floor against floor: cp's time follows the write-back of the copy it
            # overwrites (0.04-0.38 s on x10 in one run, before measure() synced), so best
            # against best
            best = min(x[0] for x in runs[(c, "ds stitch")]) / min(x[0] for x in runs[(c, "cp")])
            lo, med, hi = spread(rs)
            out.append("%-8s stitch within 2x of cp, %s: best against best %.2fx (per round %.2fx [%.2f-%.2f])"
                       % ("MET" if best <= 2 else "NOT MET", c, best, med, lo, hi))
    for label in ("c_per_task x10", "c_per_task x100", "cpp x10"):
        rs = ratio(label, "ds folded named --no-inline --no-demangle", "ds folded named")
        if rs:
            say(lambda x: x <= 1.5, "folded demangled, with inlined frames, within 1.5x of "
                "--no-inline --no-demangle, %s" % label, rs)
    for label in ("c_per_task x10", "c_per_task x100", "pipe x80"):
        rs = ratio(label, "ds folded", "ds pprof")
        if rs:
            say(lambda x: x <= 1.5, "pprof within 1.5x of folded, %s" % label, rs)
    for label in ("c_per_task x10 pipe format", "c_per_task x100 pipe format", "pipe x80"):
        for tool in ("ds folded", "ds stitch", "ds script"):
            rs = ratio(label, tool, tool + " (stdin)")
            if rs:
                say(lambda x: x <= 1.3, "standard input within 1.3x of the file, %s, %s" % (tool, label), rs)
    for tool, a, b in [(t, "c_per_task x10", "c_per_task x100")
                         for t in ("ds stitch", "ds folded", "ds pprof", "ds folded named")] \
            + [(t, "c_per_task x10 pipe format", "c_per_task x100 pipe format")
               for t in ("ds stitch (stdin)", "ds folded (stdin)", "ds script (stdin)")]:
        ra, rb = runs.get((a, tool)), runs.get((b, tool))
        if ra and rb:
            ma, mb = max(x[2] for x in ra) / 1024, max(x[2] for x in rb) / 1024
            note = " (its output grows with distinct stacks per thread)" if tool == "ds pprof" else ""
            out.append("%-8s memory flat x10 -> x100 (<= 1.25x), %s: %.0f -> %.0f MB (%.2fx)%s" % (
                "MET" if mb <= 1.25 * ma else "NOT MET", tool, ma, mb, mb / ma, note))
    return out


def _cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _perf_version():
    try:
        return subprocess.run([str(SID_PERF), "version"], capture_output=True, text=True,
                              timeout=120).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None


if __name__ == "__main__":
    sys.exit(main())
