"""deferstitch fleet on N inputs (the real captures, replicated), with 1 and 2 LocalCluster
workers, against the sequential loop a user would write (``folded`` per file, summed).

Usage:
    python3 bench/fleet.py               # 100 inputs
    python3 bench/fleet.py --inputs 20   # fewer

Inputs are hard links (or copies) of tests/data/real/captures' perf.data files in the bench cache
(DEFERSTITCH_BENCH_DIR, default ~/.cache/deferstitch-bench/fleet). Wall time includes the
cluster's start-up. Nothing here asserts a time; the outputs are checked equal.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import datafiles                                       # noqa: E402  (tests/datafiles.py)

CAPTURES = datafiles.unpack() / "captures"
CACHE = Path(os.environ.get("DEFERSTITCH_BENCH_DIR", Path.home() / ".cache" / "deferstitch-bench")) / "fleet"
SCENARIOS = ["a_per_task/per-task.data", "b_per_task/per-task.data", "c_per_task/per-task.data",
             "syswide/syswide.data", "lost_per_task/lost.data", "compressed/compressed.data",
             "two_events_cpu_task/two.data", "pipe/pipe.data", "baseline_fp_nodefer/per-task.data"]


def inputs(n):
    d = CACHE / ("n%d" % n)
    if d.exists() and len(list(d.iterdir())) == n:
        return d
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    for i in range(n):
        src = CAPTURES / SCENARIOS[i % len(SCENARIOS)]
        dst = d / ("host%03d-%s" % (i, src.name))
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy(src, dst)
    return d


def folded(text):
    out = Counter()
    for line in text.splitlines():
        k, n = line.rsplit(" ", 1)
        out[k] += int(n)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", type=int, default=100)
    args = ap.parse_args()
    d = inputs(args.inputs)
    files = sorted(d.iterdir())
    size = sum(f.stat().st_size for f in files)
    sym = ["--kallsyms", str(CAPTURES / "kallsyms.xz")]
    py = [sys.executable, "-m", "deferstitch"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t = time.time()
    seq = Counter()
    for f in files:
        seq.update(folded(subprocess.run(py + ["folded", str(f), "-q"] + sym, capture_output=True,
                                         text=True, env=env, check=True).stdout))
    rows = [("sequential folded, summed", time.time() - t)]
    for workers in (1, 2):
        t = time.time()
        out = subprocess.run(py + ["fleet", str(d), "-q", "--workers", str(workers)] + sym,
                             capture_output=True, text=True, env=env, check=True).stdout
        rows.append(("fleet, %d worker%s" % (workers, "s" * (workers > 1)), time.time() - t))
        assert folded(out) == seq, "fleet differs from the sequential answer"
    print("%d inputs, %.0f MB, %d distinct folded stacks, %d CPUs here" % (
        len(files), size / 1e6, len(seq), os.cpu_count()))
    print("| run | wall |\n|---|---:|")
    for name, secs in rows:
        print("| %s | %.1f s |" % (name, secs))


if __name__ == "__main__":
    main()
