"""The trace.dat rows: `deferstitch trace report/folded/script` against `trace-cmd report -N`
on the same file (bench/run.py --trace).

Inputs, built once into the bench cache (rebuilt when tests/tracecmd_synth.py changes), each
named KIND-MIB-FORMAT:
  KIND   big     tracecmd_synth.big(): one scenario over and over (7 distinct stacks, 2 CPUs)
         varied  tracecmd_synth.varied(): ~300 tasks, ~850 distinct stacks, 4 CPUs, losses, a
                 200 000-symbol kallsyms (what a real deferred-stack recording holds)
  MIB    13.5 (the size of the issue's deferred-stack trace) and 135 MiB of ring buffer
  FORMAT v6 (the generator's), and `trace-cmd convert --file-version 7` of it: v7 (no
         compression), zstd (trace-cmd 3.1.6) and zlib (trace-cmd 3.4, tools/sid-run: as root
         with the network for its first build; else skipped, saying why)
Every row once per round, rounds interleaved, each ratio taken within its round against
`trace-cmd report -N` (3.1.6; 3.4 through sid-run for zlib, which 3.1.6's libtracecmd cannot
read), then the median and the spread [min-max]; peak RSS per row (GNU time's %M: the largest
process of the tree; for the 3.4 rows that is what the sid-run chroot lets it see, 3 MB on the
big traces: not comparable). On the smaller v6 files only: `trace report (Python feed)`
(DEFERSTITCH_TRACE_FEED=python, the definition of the C feed) and `trace report (walk.py)`
(DEFERSTITCH_ACCEL=0). Before timing, each conversion's `trace report --json` and `trace
folded` are compared with the v6 file's: a line per mismatch (or per file deferstitch cannot
read). `--trace-only big-13.5,varied` keeps the files whose name holds one of the words.
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
KINDS = ("big", "varied")
FORMATS = ("v6", "v7", "zstd", "zlib")
SID_RUN = ROOT / "tools" / "sid-run"


def sid_run_reason():
    """None when trace-cmd 3.4 runs through tools/sid-run, else why not."""
    if os.geteuid() != 0:
        return "tools/sid-run needs root"
    try:
        p = subprocess.run([str(SID_RUN), "trace-cmd", "--version"], capture_output=True,
                           timeout=900)
    except (OSError, subprocess.TimeoutExpired) as err:
        return "tools/sid-run: %s" % err
    out = (p.stdout + p.stderr).decode(errors="replace")
    if "trace-cmd version 3." not in out:         # it prints its usage after, exit 255
        return "tools/sid-run failed: %s" % (out.strip().splitlines() or ["rc=%d" % p.returncode])[-1]
    return None


def convert(cache, src, dst, fmt):
    """trace-cmd convert SRC to v7 (fmt: v7 uncompressed, zstd, zlib: 3.4 through sid-run)."""
    comp = {"v7": "none", "zstd": "zstd", "zlib": "zlib"}[fmt]
    tc = [str(SID_RUN), "trace-cmd"] if fmt == "zlib" else ["trace-cmd"]
    subprocess.run(tc + ["convert", "-i", src, "-o", dst + ".tmp", "--file-version", "7",
                         "--compression", comp], cwd=cache, check=True, capture_output=True)
    os.replace(cache / (dst + ".tmp"), cache / dst)


def inputs(cache, only, zlib_reason):
    """[(kind, MiB, format, file name in cache)], built where missing."""
    src = ROOT / "tests" / "tracecmd_synth.py"
    stamp = hashlib.sha1(src.read_bytes()).hexdigest()[:10]
    out = []
    for kind in KINDS:
        for mib in SIZES:
            names = {fmt: "trace-%s-%s-%s-%s.dat" % (kind, mib, fmt, stamp) for fmt in FORMATS}
            wanted = [fmt for fmt in FORMATS
                      if not only or any(w in "%s-%s-%s" % (kind, mib, fmt) for w in only)]
            if not wanted:
                continue
            v6 = names["v6"]
            if not (cache / v6).exists():
                print("bench: building %s (tests/tracecmd_synth.py %s %s)" % (v6, kind, mib),
                      file=sys.stderr)
                subprocess.run([sys.executable, str(src), str(cache / (v6 + ".tmp")), kind, str(mib)],
                               check=True)
                os.replace(cache / (v6 + ".tmp"), cache / v6)
            for fmt in wanted:
                if fmt == "zlib" and zlib_reason:
                    continue
                if not (cache / names[fmt]).exists():
                    print("bench: converting %s" % names[fmt], file=sys.stderr)
                    convert(cache, v6, names[fmt], fmt)
                out.append((kind, mib, fmt, names[fmt]))
            if "v6" not in wanted:      # the reference of the output check
                out.append((kind, mib, "v6 (reference only)", v6))
    return out


def tools(fmt):
    py = [sys.executable, "-m", "deferstitch", "trace"]
    tc = [str(SID_RUN), "trace-cmd"] if fmt == "zlib" else ["trace-cmd"]
    out = [("trace-cmd report -N" + (" (3.4)" if fmt == "zlib" else ""),
            lambda f: tc + ["report", "-N", "-i", f]),
           ("ds trace report", lambda f: py + ["report", f]),
           ("ds trace folded", lambda f: py + ["folded", f, "-o", os.devnull]),
           ("ds trace script", lambda f: py + ["script", f, "-o", os.devnull])]
    if fmt == "v6":
        out += [("ds trace report (Python feed)",
                 lambda f: ["env", "DEFERSTITCH_TRACE_FEED=python"] + py + ["report", f]),
                ("ds trace report (walk.py)",
                 lambda f: ["env", "DEFERSTITCH_ACCEL=0"] + py + ["report", f])]
    return out


def _outputs(cache, name):
    """(report --json, folded) bytes of a file, or the error line."""
    py = [sys.executable, "-m", "deferstitch", "trace"]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    outs = []
    for argv in (py + ["report", "--json", name], py + ["folded", name, "-o", "-"]):
        p = subprocess.run(argv, cwd=cache, capture_output=True, env=env)
        if p.returncode != 0:
            return "rc=%d: %s" % (p.returncode, (p.stderr.decode(errors="replace").strip()
                                                 .splitlines() or [""])[-1])
        outs.append(p.stdout)
    return tuple(outs)


def check(cache, files):
    """Each conversion's report JSON and folded against its v6 file's: the mismatches."""
    refs, bad = {}, []
    for kind, mib, fmt, name in files:
        if fmt.startswith("v6"):
            refs[(kind, mib)] = _outputs(cache, name)
    for kind, mib, fmt, name in files:
        if fmt.startswith("v6"):
            continue
        got, ref = _outputs(cache, name), refs[(kind, mib)]
        if isinstance(got, str):
            bad.append("%s: deferstitch cannot read it: %s" % (name, got))
        elif isinstance(ref, str):
            bad.append("%s: its v6 file fails: %s" % (name, ref))
        else:
            for what, a, b in zip(("report --json", "folded"), got, ref):
                if a != b:
                    bad.append("%s: trace %s differs from the v6 file's" % (name, what))
    return bad


def main(args, measure, spread, fmt_table, cache):
    if shutil.which("trace-cmd") is None:
        raise SystemExit("bench: trace-cmd not installed: apt-get install trace-cmd")
    rounds = args.repeat or 3
    only = [w for w in (getattr(args, "trace_only", None) or "").split(",") if w]
    zlib = [(k, m) for k in KINDS for m in SIZES
            if not only or any(w in "%s-%s-zlib" % (k, m) for w in only)]
    zlib_reason = (sid_run_reason() if zlib else "not asked for")
    if zlib_reason:
        print("bench: zlib rows skipped: %s" % zlib_reason, file=sys.stderr)
    files = inputs(cache, only, zlib_reason)
    mismatches = check(cache, files)
    for line in mismatches:
        print("bench: MISMATCH %s" % line, file=sys.stderr)
    rows = [(kind, mib, fmt, name, tool, mk) for kind, mib, fmt, name in files
            if not fmt.endswith("only)") for tool, mk in tools(fmt)
            if not (tool.endswith("feed)") or tool.endswith("(walk.py)")) or mib == SIZES[0]]
    runs, failed = {}, {}
    t0 = time.perf_counter()
    for r in range(rounds):
        for kind, mib, fmt, name, tool, mk in rows:
            key = ("%s %s MiB %s" % (kind, mib, fmt), tool)
            if key in failed:
                continue
            subprocess.run(["cat", name], cwd=cache, stdout=subprocess.DEVNULL)    # warm
            dt, rss, cpu, status = measure(mk(name), str(cache), args.timeout)
            if status != "ok":
                failed[key] = status
                print("bench: %s on %s: %s" % (tool, name, status), file=sys.stderr)
                continue
            runs.setdefault(key, []).append((dt, cpu, rss))
            print("bench: round %d/%d  %-24s %-30s %7.2f s %6.0f MB" % (
                r + 1, rounds, key[0], tool, dt, rss / 1024), file=sys.stderr, flush=True)
    table = []
    for (inp, tool), rs in runs.items():
        base = next((v for (i, t), v in runs.items() if i == inp and t.startswith("trace-cmd")), None)
        if base and len(base) == len(rs):
            lo, med, hi = spread([w / b[0] for (w, _c, _m), b in zip(rs, base)])
            ratio = "%.2fx [%.2f-%.2f]" % (med, lo, hi)
        else:
            ratio = "-"
        wl, wm, wh = spread([w for w, _c, _m in rs])
        table.append([inp, tool, "%.2f" % wm, "%.2f-%.2f" % (wl, wh), ratio,
                      "%.0f" % (max(m for *_x, m in rs) / 1024)])
    for (inp, tool), status in failed.items():
        table.append([inp, tool, "-", "-", "fails (%s)" % status.split()[0], "-"])
    print(fmt_table(table, ["input", "tool", "median s", "spread s", "vs trace-cmd report -N",
                            "RSS MB (max)"]))
    print()
    for kind in KINDS:
        for fmt in FORMATS:
            for tool in sorted({t for (_i, t) in runs}):
                small = runs.get(("%s %s MiB %s" % (kind, SIZES[0], fmt), tool))
                big = runs.get(("%s %s MiB %s" % (kind, SIZES[1], fmt), tool))
                if small and big:
                    a, b = max(m for *_x, m in small) / 1024, max(m for *_x, m in big) / 1024
                    print("memory %-7s %-5s %-30s %4.0f MB -> %4.0f MB at 10x the file: %.2fx"
                          % (kind, fmt, tool, a, b, b / a))
    if zlib_reason:
        print("zlib rows skipped: %s" % zlib_reason)
    print("output check: %s" % ("every conversion gives the v6 file's report --json and folded"
                                if not mismatches else "%d mismatches:" % len(mismatches)))
    for line in mismatches:
        print("  " + line)
    print("\n%d rounds, interleaved, in %.0f s; load %s" % (rounds, time.perf_counter() - t0,
                                                          " ".join("%.1f" % x for x in os.getloadavg())))
    return 0
