"""The trace.dat rows: `deferstitch trace report/folded/script` against `trace-cmd report -N`
on the same file (bench/run.py --trace).

Inputs: tests/tracecmd_synth.py's big() trace at 13.5 MiB (the size of the v6 deferred-stack
trace of the issue's measurement) and ten times that, built once into the bench cache (rebuilt
when tracecmd_synth.py changes). Every row once per round, rounds interleaved, each ratio taken
within its round, then the median and the spread [min-max] of the rounds. Memory: the peak RSS
on the larger file over the one on the smaller. On the smaller file only: `trace report
(Python feed)`, our page reader and the Python feed (DEFERSTITCH_TRACE_FEED=python: the
definition of the C feed), and `trace report (libtracecmd)`, the Python path all through
(DEFERSTITCH_ACCEL=0: libtracecmd reads the pages).
"""
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = (13.5, 135)         # MiB of ring buffer


def inputs(cache):
    """{MiB: file name in cache}, built where missing."""
    src = ROOT / "tests" / "tracecmd_synth.py"
    stamp = hashlib.sha1(src.read_bytes()).hexdigest()[:10]
    out = {}
    for mib in SIZES:
        name = "trace-%s-%s.dat" % (mib, stamp)
        if not (cache / name).exists():
            print("bench: building %s (tests/tracecmd_synth.py big)" % name, file=sys.stderr)
            subprocess.run([sys.executable, str(src), str(cache / (name + ".tmp")), "big", str(mib)],
                           check=True)
            os.replace(cache / (name + ".tmp"), cache / name)
        out[mib] = name
    return out


def tools():
    py = [sys.executable, "-m", "deferstitch", "trace"]
    slow = ["env", "DEFERSTITCH_ACCEL=0"] + py
    pyfeed = ["env", "DEFERSTITCH_TRACE_FEED=python"] + py
    return [("trace-cmd report -N", lambda f: ["trace-cmd", "report", "-N", "-i", f]),
            ("ds trace report", lambda f: py + ["report", f]),
            ("ds trace folded", lambda f: py + ["folded", f]),
            ("ds trace script", lambda f: py + ["script", f]),
            ("ds trace report (Python feed)", lambda f: pyfeed + ["report", f]),
            ("ds trace report (libtracecmd)", lambda f: slow + ["report", f])]


def main(args, measure, spread, fmt_table, cache):
    if shutil.which("trace-cmd") is None:
        raise SystemExit("bench: trace-cmd not installed: apt-get install trace-cmd")
    rounds = args.repeat or 3
    files = inputs(cache)
    rows = [(mib, files[mib], tool, mk) for mib in SIZES for tool, mk in tools()
            if not (tool.endswith(")") and mib != SIZES[0])]
    runs = {}
    t0 = time.perf_counter()
    for r in range(rounds):
        for mib, name, tool, mk in rows:
            subprocess.run(["cat", name], cwd=cache, stdout=subprocess.DEVNULL)    # warm
            dt, rss, cpu, status = measure(mk(name), str(cache), args.timeout)
            if status != "ok":
                raise SystemExit("bench: %s on %s: %s" % (tool, name, status))
            runs.setdefault((mib, tool), []).append((dt, cpu, rss))
            print("bench: round %d/%d  %6s MiB  %-30s %7.2f s %6.0f MB" % (
                r + 1, rounds, mib, tool, dt, rss / 1024), file=sys.stderr, flush=True)
    table = []
    for (mib, tool), rs in runs.items():
        base = runs[(mib, "trace-cmd report -N")]
        ratios = [w / b[0] for (w, _c, _m), b in zip(rs, base)]
        lo, med, hi = spread(ratios)
        wl, wm, wh = spread([w for w, _c, _m in rs])
        table.append(["%s MiB" % mib, tool, "%.2f" % wm, "%.2f-%.2f" % (wl, wh),
                      "%.2fx [%.2f-%.2f]" % (med, lo, hi), "%.0f" % (max(m for *_x, m in rs) / 1024)])
    print(fmt_table(table, ["input", "tool", "median s", "spread s", "vs trace-cmd report -N",
                            "RSS MB (max)"]))
    print()
    for tool, _mk in tools():
        small, big = runs.get((SIZES[0], tool)), runs.get((SIZES[1], tool))
        if small and big:
            print("memory %-30s %.0f MB -> %.0f MB at 10x the file: %.2fx" % (
                tool, max(m for *_x, m in small) / 1024, max(m for *_x, m in big) / 1024,
                max(m for *_x, m in big) / max(m for *_x, m in small)))
    print("\n%d rounds, interleaved, in %.0f s; load %s" % (rounds, time.perf_counter() - t0,
                                                          " ".join("%.1f" % x for x in os.getloadavg())))
    return 0
