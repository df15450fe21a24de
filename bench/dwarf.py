"""Naming with inlined frames at real size: deferstitch folded/script against perf 7.2's `perf
script` on C++ programs with 50, 200 and 520 MB of .debug_info (bench/run.py --dwarf).

Inputs: bench/dwarfgen.py builds and records them once into the bench cache (dwarf-small,
dwarf-medium, dwarf-large; dwarf-python: a CPython built with -g running json/re/decimal, when
~/.pyenv has one). Rows per input, every one through the CLI with the recording's own symfs:

    ds folded                  deferstitch folded F --symfs S -q -o /dev/null   (inlined frames)
    ds script                  deferstitch script F --symfs S -q -o /dev/null   (inlined frames)
    ds folded --no-inline      ds script --no-inline
    perf 7.2 script            tools/sid-perf script -i F --symfs S   (prints inlined frames by default)
                               with SID_BINDS putting the recorded files the chroot lacks (the
                               program, pyenv's libpython) at their recorded paths: perf's libdw
                               opens a dso by its recorded name, else perf falls back to an
                               addr2line child (2x slower, and GCC clones named otherwise)

Before timing, a names check: our `script --max-stack 1024` against perf 7.2's text, frame for
frame (tests/perf_text.py compare_frames, as the capture tests compare). Rows run once per round,
rounds interleaved (--repeat, default 3); a row slower than SLOW seconds, or one that failed or
timed out (--timeout), is not run again. Peak RSS is GNU time's %M: the largest process of the
tree (for perf, perf itself or an addr2line it started, whichever is larger: not their sum).
`--dwarf-only small,python` keeps the inputs whose name holds one of the words; `--dwarf-perf-only
medium,large` measures only perf 7.2 on those (for a reader too slow to finish them).
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import dwarfgen                             # noqa: E402
from perf_text import compare_frames, parse_script  # noqa: E402

SID_PERF = ROOT / "tools" / "sid-perf"
NAMES = list(dwarfgen.SIZES) + ["python"]
PERF = "perf 7.2 script"
SLOW = 120              # seconds: a row this slow in round 1 is not repeated


def binds(d):
    """SID_BINDS=... for the folders of d's symfs that the chroot lacks (its binds are of
    folders): the recorded files outside the system's libraries (perf itself runs on the
    chroot's own) at their recorded paths."""
    rootfs = Path(os.environ.get("SID_ROOTFS") or Path(os.environ.get("SID_CACHE") or
                  Path.home() / ".cache" / "deferstitch-rig") / "rootfs")
    symfs = dwarfgen.CACHE / d / "symfs"
    out, todo = [], [symfs]
    while todo:
        for f in sorted(todo.pop().iterdir()):
            rel = f.relative_to(symfs)
            if not f.is_dir():
                continue
            if (rootfs / rel).exists() and not (rootfs / rel).is_symlink():
                todo.append(f)
            else:
                out.append("%s:/%s" % (f.resolve(), rel))
    return "SID_BINDS=" + " ".join(out)


def tools(d):
    """[(row, argv)] on the input in directory ``d`` (relative to the cache). Both sides get an
    empty build-id cache: the host's ~/.debug (which perf in its chroot does not see) must not
    name frames for one side only."""
    f, where = d + "/perf.data", ["--symfs", d + "/symfs", "--buildid-dir", d + "/buildid"]
    py = [sys.executable, "-m", "deferstitch"]
    quiet = where + ["-q", "-o", os.devnull]
    return [("ds folded", py + ["folded", f] + quiet),
            ("ds script", py + ["script", f] + quiet),
            ("ds folded --no-inline", py + ["folded", f, "--no-inline"] + quiet),
            ("ds script --no-inline", py + ["script", f, "--no-inline"] + quiet),
            (PERF, ["env", binds(d), str(SID_PERF), "--buildid-dir", d + "/buildid", "script", "-i", f,
                    "--symfs", d + "/symfs"])]


def names_check(cache, d, timeout):
    """(summary line, [first differences]) of our script text against perf 7.2's; both texts
    are kept beside the input (perf72-script.txt, ours-script.txt)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    argvs = dict(tools(d))
    texts = []
    for argv in (argvs[PERF], argvs["ds script"][:-2] + ["--max-stack", "1024"]):
        try:
            p = subprocess.run(argv, cwd=cache, capture_output=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return "names not checked: %s did not finish in %.0f s" % (argv[0].rsplit("/", 1)[-1], timeout), []
        if p.returncode:
            return "names not checked: %s: rc=%d" % (argv[:4], p.returncode), []
        texts.append(p.stdout.decode(errors="replace"))
        (cache / d / ("%s-script.txt" % ("ours" if texts[1:] else "perf72"))).write_bytes(p.stdout)
    theirs, mine = parse_script(texts[0], inlined=True), parse_script(texts[1], inlined=True)
    bad, first, frames, inlined = compare_frames(
        theirs, mine, lambda p, o: "inlined" if "inlined" in (p[2], o[2]) else "name", first_max=5)
    discarded = bad.pop("perf-discarded-chain", 0)      # perf drops every frame, we keep them
    what = "%d samples, %d frames (%d inlined)" % (len(theirs), frames, inlined)
    if discarded:
        what += "; %d samples whose chain perf discarded, ours kept" % discarded
    if not bad:
        return "names as perf 7.2's: every frame (%s)" % what, []
    return ("names NOT as perf 7.2's: %s differ (%s)" % (", ".join("%d %s" % (n, k) for k, n in bad.items()),
                                                         what), first)


def main(args, measure, spread, fmt_table, cache):
    if os.geteuid() != 0 or not SID_PERF.exists():
        raise SystemExit("bench: --dwarf needs root (perf record, tools/sid-perf)")
    rounds = args.repeat or 3
    only = [w for w in (args.dwarf_only or "").split(",") if w]
    perf_only = [w for w in (args.dwarf_perf_only or "").split(",") if w]
    names = [n for n in NAMES if not (only or perf_only) or any(w in n for w in only + perf_only)]
    inputs = []
    for name in names:
        if name == "python" and dwarfgen.python_binary() is None:
            print("bench: no CPython with debug info in ~/.pyenv: no python row", file=sys.stderr)
            continue
        d = dwarfgen.build(name)
        (d / "buildid").mkdir(exist_ok=True)
        info = json.loads((d / "done").read_text())
        rows = tools(str(d.relative_to(cache)))
        if any(w in name for w in perf_only) and not any(w in name for w in only):
            rows = [r for r in rows if r[0] == PERF]
        inputs.append((name, info, rows))
    checks = {}
    for name, _info, rows in inputs:
        if len(rows) > 1:
            checks[name] = names_check(cache, "dwarf-%s" % name, args.timeout)
            print("bench: %s: %s" % (name, checks[name][0]), file=sys.stderr)
    runs, failed = {}, {}
    t0 = time.perf_counter()
    for r in range(rounds):
        for name, _info, rows in inputs:
            for tool, argv in rows:
                key = (name, tool)
                if key in failed or (r and runs[key][0][0] > SLOW):
                    continue
                dt, rss, cpu, status = measure(argv, str(cache), args.timeout)
                if status != "ok":
                    failed[key] = "not finished in %.0f s" % args.timeout if status == "timeout" else status
                    print("bench: %s on %s: %s" % (tool, name, failed[key]), file=sys.stderr)
                    continue
                runs.setdefault(key, []).append((dt, cpu, rss))
                print("bench: round %d/%d  %-7s %-22s %8.2f s %6.0f MB" % (r + 1, rounds, name, tool, dt,
                                                                          rss / 1024), file=sys.stderr, flush=True)
    table = []
    for name, info, rows in inputs:
        label = "%s (%.0f MB .debug_info)" % (name, info["debug_info_bytes"] / 1e6)
        base = runs.get((name, PERF))
        for tool, _argv in rows:
            rs = runs.get((name, tool))
            if not rs:
                table.append([label, tool, failed.get((name, tool), "-"), "-", "-", "-", "-"])
                continue
            wl, wm, wh = spread([w for w, _c, _m in rs])
            ratio = "-"
            if base and tool != PERF:
                n = min(len(base), len(rs))
                lo, med, hi = spread([a[0] / b[0] for a, b in zip(rs[:n], base[:n])])
                ratio = "%.2fx [%.2f-%.2f]" % (med, lo, hi)
            table.append([label, tool, "%.2f" % wm, "%.2f-%.2f" % (wl, wh), "%.2f" % spread([c for _w, c, _m in rs])[1],
                          ratio, "%.0f" % (max(m for *_x, m in rs) / 1024)])
    print(fmt_table(table, ["input", "tool", "median s", "spread s", "cpu s", "time / perf 7.2's", "RSS MB (max)"]))
    print()
    for line in goal_lines(inputs, runs, failed, spread):
        print(line)
    for name, (line, first) in checks.items():
        print("%s: %s" % (name, line))
        for key, p, o in first:
            print("  sample %s: perf %s, ours %s" % (key, p, o))
    print("\n%d rounds, interleaved, in %.0f s; load %s" % (rounds, time.perf_counter() - t0,
                                                          " ".join("%.1f" % x for x in os.getloadavg())))
    return 0


def goal_lines(inputs, runs, failed, spread):
    """The goals per input: folded and script with inlined frames at most perf 7.2's time
    (aim: 0.3x), peak RSS at most perf's or 100 MB where perf takes less."""
    out = []
    for name, _info, _rows in inputs:
        base = runs.get((name, PERF))
        if not base:
            continue
        cap = max(max(m for *_x, m in base) / 1024, 100)
        for tool in ("ds folded", "ds script"):
            rs = runs.get((name, tool))
            if not rs:
                if (name, tool) in failed:
                    out.append("NOT MET  %s with inlined frames <= 1x perf 7.2 script, %s: %s"
                               % (tool, name, failed[(name, tool)]))
                continue
            n = min(len(base), len(rs))
            lo, med, hi = spread([a[0] / b[0] for a, b in zip(rs[:n], base[:n])])
            out.append("%-8s %s with inlined frames <= 1x perf 7.2 script (aim 0.3x), %s: %.2fx [%.2f-%.2f]"
                       % ("MET" if med <= 1 else "NOT MET", tool, name, med, lo, hi))
            rss = max(m for *_x, m in rs) / 1024
            out.append("%-8s %s peak RSS <= max(perf 7.2's, 100 MB), %s: %.0f MB (limit %.0f MB)"
                       % ("MET" if rss <= cap else "NOT MET", tool, name, rss, cap))
    return out
