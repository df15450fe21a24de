"""The run of a command: reader -> stitcher -> output, through the C engine or the Python path.

    PerfData --(engine.EngineRun | PerfFeed)--> output (StitchedFile, Folded, PerfScript, ...)

``run(args, make)`` opens the input, builds the output with ``make(perf, ctx)`` and drives it
on the engine when the engine can take the input (perfdata/engine.py), else, or when the
engine falls back, on the Python path, which is the definition. The CLI only parses arguments
and picks the output.
"""
import os
import sys

from .errors import DeferstitchError, FormatError
from .output.perf_records import PerfContext
from .output.stitched_file import StitchedFile
from .perfdata import engine
from .perfdata.feed import PerfFeed
from .perfdata.reader import PerfData


class Null:
    """An output that writes nothing: report only."""
    report = None

    def record(self, rec):
        pass

    def sample(self, s):
        pass

    def close(self):
        pass


def _progress(perf, quiet):
    """tick(file offset): a progress line on stderr for big inputs when stderr is a terminal."""
    if quiet or not sys.stderr.isatty() or perf.data_end is None or perf.data_end < (64 << 20):
        return None
    total = perf.data_end
    state = {"n": 0}

    def tick(offset):
        state["n"] += 1
        if state["n"] & 0xFFFF == 0 or offset >= total:
            sys.stderr.write("\rdeferstitch: %3d%%" % (100 * offset // total))
            sys.stderr.flush()
    return tick


def run(args, make, symbols=False, perf=None, hint=False):
    """Run the input (``perf`` if already open) into ``make(perf, ctx)``: through the C engine
    when it can take the file (perfdata/engine.py), else, or when it falls back, through the
    Python path. Returns (report, output). ``hint``: say on stderr when the input has no
    deferred callchains at all (report and stitch: the user may have recorded without defer)."""
    rep, out, perf = _run(args, make, symbols, perf)
    if hint and not args.quiet and not has_deferred(perf, rep):
        sys.stderr.write("deferstitch: %s: no deferred callchains (record with --call-graph "
                         "fp,defer)\n" % perf.path)
    return rep, out


def has_deferred(perf, rep):
    """Whether any attr asks for deferred callchains and the stream holds any: a sample ending
    in PERF_CONTEXT_USER_DEFERRED (not passed) or a CALLCHAIN_DEFERRED record."""
    return any(e.attr.defer_callchain for e in perf.evlist.entries) and (
        rep.samples > rep.passed or rep.deferred_records > 0)


def _run(args, make, symbols, perf):
    perf = perf or PerfData.open(args.input)
    if perf.warning is not None and not args.quiet:
        sys.stderr.write("deferstitch: %s: %s\n" % (perf.path, perf.warning))
    said = set()

    def warn(line):                  # once per run, though a fallback builds a second context
        if line not in said and not args.quiet:
            said.add(line)
            sys.stderr.write(line + "\n")
    ctx = context(perf, args, warn) if symbols else None
    out = make(perf, ctx)
    mode = _engine_mode(out)
    why = engine.unavailable(perf) if mode is not None else "an output the engine does not feed"
    required = os.environ.get("DEFERSTITCH_ACCEL") == "require"
    if why is None:
        try:
            return _run_engine(perf, out, args, ctx, mode), out, perf
        except (engine.Fallback, FormatError) as err:
            why = "fell back at: %s" % err
        perf.close()
        if hasattr(out, "discard"):         # a file we can rewrite
            out.discard()
        written = getattr(out, "written", 0)   # text already out (perf script's, in time order)
        perf = PerfData.open(args.input)
        ctx = context(perf, args, warn) if symbols else None
        out = make(perf, ctx)
        if written:
            out.skip = written
    if required:
        raise DeferstitchError("DEFERSTITCH_ACCEL=require, but the C engine was not used: %s" % why)
    return _run_python(perf, out, args, ctx), out, perf


def _engine_mode(out):
    if isinstance(out, StitchedFile):
        return engine.MODE_FILE
    if isinstance(out, Null):
        return engine.MODE_NONE
    if hasattr(out, "turn"):             # prints in time order
        return engine.MODE_ORDERED
    if hasattr(out, "resolved_ips"):
        return engine.MODE_EVENTS
    return None


def _run_engine(perf, out, args, ctx, mode):
    run = engine.EngineRun(perf, mode, args.max_pending,
                           keep=out.writer.keep_table() if mode == engine.MODE_FILE else None)
    tick = _progress(perf, args.quiet)
    done = perf.data_start
    for chunk in run.chunks():
        if mode == engine.MODE_FILE:
            out.writer.write_kept(chunk)
        elif mode != engine.MODE_NONE:      # events: resolved samples, side-band records, turns
            add, observe, turn = out.resolved_ips, ctx.observe, getattr(out, "turn", None)
            for ev in chunk:
                cls = ev.__class__
                if cls is tuple:
                    add(*ev)
                elif cls is int:
                    turn(ev)
                else:
                    observe(ev)
        if tick is not None:
            done += engine.READ_SIZE
            tick(min(done, perf.data_end))
    rep = run.report()
    if mode == engine.MODE_FILE:
        out.writer.dropped = run.dropped
    out.report = rep
    out.close()
    if tick is not None:
        sys.stderr.write("\r\033[K")
    return rep


def _run_python(perf, out, args, ctx):
    """reader -> feed/stitcher -> ``out``; ctx (maps, comms) and the progress line watch the input."""
    tick = _progress(perf, args.quiet)
    watchers = [w for w in (ctx.observe if ctx else None, (lambda rec: tick(rec.offset)) if tick else None) if w]

    def observe(rec):
        for w in watchers:
            w(rec)
    feed = PerfFeed(perf, out, max_pending=args.max_pending,
                    observe=watchers[0] if len(watchers) == 1 else observe if watchers else None)
    try:
        feed.run()
    except Exception:       # damaged input: what was good before it is still written
        _finish(out, feed, tick)
        raise
    except BaseException:   # interrupted (Ctrl-C, SIGTERM): the output is dropped, not finished
        if tick is not None:
            sys.stderr.write("\r\033[K")
        raise
    _finish(out, feed, tick)
    return feed.report


def _finish(out, feed, tick):
    out.report = feed.report
    out.close()
    if tick is not None:
        sys.stderr.write("\r\033[K")


def context(perf, args, warn=None):
    """Maps, comms and symbol options for outputs that name frames; warn(line) for perf's
    warnings (a kernel whose symbols are not found)."""
    return PerfContext(perf, symbols=not args.no_symbols, kallsyms=args.kallsyms, symfs=args.symfs,
                       buildid_dir=args.buildid_dir, warn=warn)
