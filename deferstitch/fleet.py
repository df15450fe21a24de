"""``deferstitch fleet``: many perf.data files into one profile and one report, on Dask.

    INPUTS --expand--> paths --client.map(stitch_input)--> per input, in a worker:
                                 (report row, report JSON, {(comm, frame keys): weight})
           --combine(), 8 at a time, a tree of Dask tasks--> one part
           --StackNamer on the client, once per distinct frame key--> folded / pprof / speedscope
                                 (each by the single-file command's own writer)

Each input is read where it lies (a path every worker sees, or an fsspec URL), and only small
things travel: counts per stack of addresses keyed by build id + offset (output/address_stacks.py)
and the file's report. Names are given after the reduction, so each symbol file is read once.
A bad input costs only itself: it is listed with its one-line error and none of its samples
count. Dask retries the task of a worker that dies; a task's result is all or nothing, so nothing
is counted twice. Without ``--scheduler`` an embedded LocalCluster runs one process per core.
"""
import argparse
import contextlib
import glob
import os
import shutil
import sys
import tempfile
from collections import Counter

from . import __version__, pipeline, selection
from .abi import consts as C
from .errors import DeferstitchError
from .output.address_stacks import AddressStacks, StackNamer
from .output.atomic import Output
from .output.offcpu import OffCpuFeed
from .perfdata.recording import open_input, recordings_in
from .report import KEEP_FIRST
from .symbols.perf_context import kallsyms_for, kernel_build_id

FAN_IN = 8          # parts combined per task of the reduction tree


def expand(inputs):
    """Files, directories (every file below, sorted; a --threads directory, and each
    --switch-output recording's files, one input: recording.recordings_in), globs, and fsspec
    URLs (globs allowed)."""
    out = []
    for item in inputs:
        if "://" in item and not item.startswith("file://"):
            import fsspec
            fs, _token, paths = fsspec.get_fs_token_paths(item)
            proto = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
            out.extend(p if "://" in p else "%s://%s" % (proto, p) for p in paths)
            continue
        item = item[len("file://"):] if item.startswith("file://") else item
        if os.path.isdir(item):
            for root, dirs, files in sorted(os.walk(item)):
                found = recordings_in(root, files)
                if found == [root]:             # a perf record --threads directory
                    dirs.clear()
                out.extend(found)
        elif glob.has_magic(item):
            out.extend(sorted(p for p in glob.glob(item, recursive=True) if os.path.isfile(p)))
        else:
            out.append(item)         # a missing file is that input's own error
    return out


def _local(path):
    """(a local path to read, a temporary directory to remove or None): URLs are fetched."""
    if "://" not in path:
        return path, None
    import fsspec
    tmp = tempfile.mkdtemp(prefix="deferstitch-fleet-")
    local = os.path.join(tmp, "input.data")
    with fsspec.open(path, "rb") as src, open(local, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    return local, tmp


def stitch_input(path, opts):
    """One input, in a worker: the part ([row], report JSON or None, stacks) of combine()."""
    row = {"path": path, "hostname": None, "samples": 0, "stitched": 0, "passed": 0,
           "unmatched": {}, "error": None}
    out = []
    tmp = None
    try:
        local, tmp = _local(path)
        perf = open_input([local])
        row["hostname"] = perf.feature(C.FEATURE_IDS["HOSTNAME"])
        ks = None       # the kernel's symbols as folded would find them, decided on the client
        if opts["symbols"]:
            ks = opts["kallsyms"] or (None if opts["symfs"] else (
                "default", kernel_build_id(perf), perf.feature(C.FEATURE_IDS["OSRELEASE"])))
        # naming is the client's, except run-time generated code: its map file or jitdump
        # (under symfs) is the task's to read (output/address_stacks.py)
        args = argparse.Namespace(input=local, quiet=True, max_pending=opts["max_pending"],
                                  no_symbols=True, kallsyms=None, symfs=opts["symfs"], buildid_dir=None,
                                  **opts.get("select", {}))

        def make(_perf, ctx):
            waits = opts.get("off_cpu")     # the stacks of waits, each weighted by its ns (output/offcpu.py)
            out.append(AddressStacks(ctx, opts["symbols"], ks, "ns" if waits else opts["weight"]))
            return OffCpuFeed(out[-1], perf, opts.get("preempted")) if waits else out[-1]
        rep, _o = pipeline.run(args, make, symbols=True, perf=perf)
    except (DeferstitchError, OSError, ValueError) as err:
        row["error"] = str(err).splitlines()[0] if str(err) else type(err).__name__
        return [row], None, Counter()
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    js = rep.to_json()
    row.update(samples=rep.samples, stitched=rep.stitched, passed=rep.passed,
               unmatched=dict(rep.unmatched))
    return [row], js, out[-1].stacks


def merge_json(a, b):
    """Totals of two report JSONs: numbers summed (``max_*`` keys: the larger; ``version`` kept), objects merged
    key by key (``by_thread`` and ``by_cpu`` add up by tid and cpu number across inputs), lists
    joined up to their first KEEP_FIRST, flags and-ed, anything else kept from the first."""
    if a is None:
        return b
    if b is None:
        return a
    out = dict(a)
    for k, v in b.items():
        if k not in out:
            out[k] = v
            continue
        w = out[k]
        if k == "version":
            continue
        if isinstance(v, bool) or isinstance(w, bool):
            out[k] = bool(w) and bool(v)
        elif isinstance(v, (int, float)) and isinstance(w, (int, float)):
            out[k] = max(w, v) if k.startswith("max_") or k == "max_pending" else w + v
        elif isinstance(v, dict) and isinstance(w, dict):
            out[k] = merge_json(w, v)
        elif isinstance(v, list) and isinstance(w, list):
            out[k] = (w + v)[:KEEP_FIRST]
    return out


def combine(*parts):
    """One part from several: rows joined, report JSONs merged, stacks summed."""
    rows, js, stacks = [], None, Counter()
    for p_rows, p_js, p_stacks in parts:
        rows.extend(p_rows)
        js = merge_json(js, p_js)
        stacks.update(p_stacks)
    return rows, js, stacks


def _client(args):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise DeferstitchError("fleet needs Dask: pip install 'deferstitch[fleet]'") from None
    if args.scheduler:
        return Client(args.scheduler, timeout="20s"), None
    cluster = LocalCluster(n_workers=args.workers or os.cpu_count() or 1, threads_per_worker=1,
                           processes=True, dashboard_address=":8787" if args.dashboard else None)
    return Client(cluster), cluster


def run(args):
    """The whole fleet command: returns the exit status."""
    paths = expand(args.inputs)
    if not paths:
        raise DeferstitchError("fleet: no inputs in %s" % " ".join(args.inputs))
    if args.output in (None, "-") and args.format == "pprof" and sys.stdout is not None and sys.stdout.isatty():
        raise DeferstitchError("refusing to write a gzip'd profile to a terminal: give -o FILE")
    opts = {"symbols": not args.no_symbols, "kallsyms": args.kallsyms, "symfs": args.symfs,
            "weight": args.weight, "max_pending": args.max_pending,
            "off_cpu": args.off_cpu, "preempted": args.preempted,
            "select": {n: getattr(args, n) for n in selection.NAMES}}
    selection.check(args)       # a bad list or range: one line before any input is read
    local = [p for p in paths if "://" not in p]
    with contextlib.ExitStack() as outputs:     # checked before the run, replaced when whole
        out = outputs.enter_context(Output(args.output, binary=args.format == "pprof", inputs=local))
        rep_f = outputs.enter_context(Output(args.report, inputs=local)) if args.report else None
        return _run(args, paths, opts, out, rep_f)


def _run(args, paths, opts, out, rep_f):
    client, cluster = _client(args)
    try:
        from dask.distributed import as_completed
        leaves = client.map(stitch_input, paths, opts=opts, pure=False)
        level = leaves
        while len(level) > 1:
            level = [client.submit(combine, *level[i:i + FAN_IN], pure=False)
                     for i in range(0, len(level), FAN_IN)]
        for done, fut in enumerate(as_completed(leaves), 1):
            if args.verbose:
                sys.stderr.write("fleet: %d/%d inputs done\n" % (done, len(paths)))
                sys.stderr.flush()
        rows, totals, stacks = combine(level[0].result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    namer = StackNamer(symfs=args.symfs, buildid_dir=args.buildid_dir,
                       inline=not getattr(args, "no_inline", False),
                       demangle=not getattr(args, "no_demangle", False))
    lines = namer.folded(_with_kallsyms(stacks, namer.resolver.locator.buildid_dir))
    _write(args, lines, out)
    bad = [r for r in rows if r["error"]]
    report = {"version": 1, "deferstitch": __version__, "inputs": rows,
              "totals": totals or {}, "bad_inputs": len(bad)}
    if rep_f is not None:
        import json
        json.dump(report, rep_f, indent=1, default=str)
        rep_f.write("\n")
    if not args.quiet:
        t = totals or {}
        sys.stderr.write("deferstitch fleet: %d inputs (%d bad), %d samples: %d stitched, %d passed, "
                         "%d unmatched\n" % (len(rows), len(bad), t.get("samples", 0), t.get("stitched", 0),
                                             t.get("passed", 0), sum(t.get("unmatched", {}).values())))
        for r in bad:
            sys.stderr.write("deferstitch fleet: %s\n" % (r["error"] if r["path"] in r["error"] else "%s: %s" % (r["path"], r["error"])))
    return 2 if bad and args.strict else 0


def _with_kallsyms(stacks, buildid_dir):
    """Kernel keys made with the default rule get the kallsyms ``folded`` would find for their
    file, here on the client (kallsyms_for: by the kernel's build id, or /proc/kallsyms for a
    recording of the kernel running here), else none."""
    chosen = {}
    out = Counter()
    for (comm, keys), w in stacks.items():
        fixed = []
        for k in keys:
            if k[0] == "k" and isinstance(k[1], tuple):
                if k[1] not in chosen:
                    chosen[k[1]] = kallsyms_for(k[1][1], k[1][2], buildid_dir)[0]
                k = ("k", chosen[k[1]]) + k[2:]
            fixed.append(k)
        out[(comm, tuple(fixed))] += w
    return out


def _write(args, lines, f):
    """The named stacks in the format asked, by that format's own writer."""
    from .output import folded, pprof, speedscope
    if args.format == "folded":
        folded.write(f, lines)
    elif args.format == "speedscope":
        speedscope.from_folded(f, lines, "fleet of %d inputs" % len(args.inputs),
                               "nanoseconds" if args.weight == "period" or args.off_cpu else "none")
    else:
        unit = pprof.folded_unit("ns" if args.off_cpu else args.weight, "off-cpu")
        pprof.from_folded(lines, unit).write(f)


def register(sub, symbol_options):
    """Add ``fleet`` to the main parser's subparsers."""
    from .stitcher import DEFAULT_MAX_PENDING
    sp = sub.add_parser("fleet", help="many perf.data files into one profile and one report (Dask)",
                        description=__doc__.split("\n")[0].replace("``", ""))
    sp.add_argument("inputs", nargs="+", metavar="INPUT",
                    help="perf.data files, directories, globs, or fsspec URLs the workers can open")
    sp.add_argument("-o", "--output", help="the profile (default or -: stdout)")
    sp.add_argument("--format", choices=("folded", "pprof", "speedscope"), default="folded",
                    help="the profile's format (default folded)")
    sp.add_argument("--report", metavar="REPORT.json",
                    help="a row per input (path, hostname, counts, error) and totals as report --json")
    sp.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                    help="join this Dask scheduler (default: an embedded LocalCluster)")
    sp.add_argument("--workers", type=int, metavar="N", help="LocalCluster processes (default: one per core)")
    sp.add_argument("--dashboard", action="store_true", help="LocalCluster: serve Dask's dashboard on :8787")
    sp.add_argument("--weight", choices=("samples", "period"), default="samples",
                    help="count samples or sum their periods")
    sp.add_argument("--off-cpu", action="store_true",
                    help="where tasks wait: sched_switch stacks weighted by ns off the CPU "
                         "(as folded --off-cpu)")
    sp.add_argument("--preempted", action="store_true", help="with --off-cpu: count preemptions too")
    sp.add_argument("--strict", action="store_true", help="exit 2 if any input is bad")
    selection.add_options(sp)       # percent slices of --time: of each input's own recording
    sp.add_argument("--max-pending", type=int, default=DEFAULT_MAX_PENDING, metavar="N",
                    help="per input: samples waiting for their stack at most (default %(default)d)")
    sp.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    sp.add_argument("-v", "--verbose", action="store_true", help="a line on stderr as each input is done")
    symbol_options(sp)
    sp.set_defaults(func=run, command_parser=sp)
    return sp
