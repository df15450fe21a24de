"""The run of a command: reader -> stitcher -> output, through the C engine or the Python path.

    PerfData --(engine.EngineRun | PerfFeed)--> output (StitchedFile, Folded, PerfScript, ...)

``run(args, make)`` opens the input, builds the output with ``make(perf, ctx)`` and drives it
in one pass: on the engine when the engine can take the input (perfdata/engine.py), else on the
Python path, which is the definition; a progress line on a terminal for long runs. The CLI only
parses arguments and picks the output.
"""
import os
import sys
import time

from . import selection
from .abi import consts as C
from .errors import DeferstitchError, FormatError
from .output import sink as S
from .output.select import DUMMY
from .output.sink import Sink
from .perfdata import engine
from .perfdata.feed import PerfFeed
from .perfdata.recording import open_input
from .symbols.perf_context import PerfContext


class Null(Sink):
    """An output that writes nothing: report only."""
    takes = S.REPORT
    report = None


class Progress:
    """A progress line on stderr for long inputs (files and pipes) when stderr is a terminal:
    bytes read (and the share of the data section, when known), records, samples, samples/s.
    It appears once the run has taken DEFERSTITCH_PROGRESS_DELAY seconds (default 1), so that
    short runs print nothing, and is rewritten at most four times a second."""

    def __init__(self, perf):
        one = not getattr(perf, "parts", None)      # several files: no share of one file's size
        self.total = perf.data_end - perf.data_start if perf.data_end is not None and one else None
        self.base = perf.data_start
        self.start = self.last = time.monotonic()
        self.delay = float(os.environ.get("DEFERSTITCH_PROGRESS_DELAY", "1"))
        self.shown = False

    def tick(self, offset, records, samples):
        now = time.monotonic()
        if now - self.start < self.delay or (self.shown and now - self.last < 0.25):
            return
        self.last, self.shown = now, True
        done = offset - self.base
        share = " (%d %%)" % (100 * done // self.total) if self.total else ""
        rate = samples / max(now - self.start, 1e-6)
        sys.stderr.write("\rdeferstitch: %.1f MB read%s, %d records, %d samples, %d samples/s\033[K"
                         % (done / 1e6, share, records, samples, rate))
        sys.stderr.flush()

    def done(self):
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def _progress(perf, quiet):
    return None if quiet or not sys.stderr.isatty() else Progress(perf)


def run(args, make, symbols=False, perf=None, hint=False):
    """Run the input (``perf`` if already open) into ``make(perf, ctx)``: through the C engine
    when it can take the input (perfdata/engine.py), else through the Python path, with the
    progress line on a terminal. Either way one pass: damage raises its FormatError after what
    came before it was delivered. Returns (report, output). ``hint``: say on stderr when the
    input has no deferred callchains at all (report and stitch: recorded without defer?)."""
    perf = perf or open_input(getattr(args, "inputs", None) or [args.input])
    if perf.warning is not None and not args.quiet:
        sys.stderr.write("deferstitch: %s: %s\n" % (perf.path, perf.warning))

    def warn(line):
        if not args.quiet:
            sys.stderr.write(line + "\n")
    select = selection_of(args, perf)
    ctx = context(perf, args, warn) if symbols else None
    out = make(perf, ctx)
    mode = MODES.get(getattr(out, "takes", None))     # output/sink.py: None, the Python path
    why = engine.unavailable(perf) if mode is not None else "an output the engine does not feed"
    if why is None:
        rep = _run_engine(perf, out, args, ctx, mode, select)
    elif os.environ.get("DEFERSTITCH_ACCEL") == "require":
        raise DeferstitchError("DEFERSTITCH_ACCEL=require, but the C engine was not used: %s" % why)
    else:
        rep = _run_python(perf, out, args, ctx, select)
    if perf.auxtrace and not args.quiet:   # Intel PT & co: perf's synthesized samples are not ours
        sys.stderr.write(perf.auxtrace.warning(perf.path) + "\n")
    if hint and not args.quiet and not has_deferred(perf, rep):
        sys.stderr.write("deferstitch: %s: no deferred callchains (record with --call-graph "
                         "fp,defer)\n" % perf.path)
    return rep, out


def has_deferred(perf, rep):
    """Whether any attr asks for deferred callchains and the stream holds any: a sample ending
    in PERF_CONTEXT_USER_DEFERRED (not passed) or a CALLCHAIN_DEFERRED record."""
    return any(e.attr.defer_callchain for e in perf.evlist.entries) and (
        rep.samples > rep.passed or rep.deferred_records > 0)


# what an output takes (its ``takes``: output/sink.py) -> the engine's mode
MODES = {S.REPORT: engine.MODE_NONE, S.FILE: engine.MODE_FILE, S.SAMPLES: engine.MODE_EVENTS,
         S.ORDERED: engine.MODE_ORDERED, S.COUNTED: engine.MODE_COUNTED,
         S.CHAINS: engine.MODE_CHAINS, S.OUTCOMES: engine.MODE_OUTCOMES}


def selection_of(args, perf):
    """The samples ``args`` chooses (--comm, --pid, --tid, --cpu, --time), or None for all;
    perf's words, one line, for a list or range perf refuses (selection.py)."""
    select = selection.from_args(args, perf.sample_times)
    if select is not None and select.cpus is not None:
        for ent in perf.evlist.entries:     # builtin-script.c: perf_session__cpu_bitmap
            if not ent.attr.sample_type & C.PERF_SAMPLE_CPU and (ent.attr.type, ent.attr.config) != DUMMY:
                raise selection.SelectionError("%s: File does not contain CPU events. Remove -C "
                                               "option to proceed." % perf.path)
    return select


def _run_engine(perf, out, args, ctx, mode, select=None):
    run = engine.EngineRun(perf, mode, args.max_pending,
                           keep=out.writer.keep_table() if mode == engine.MODE_FILE else None,
                           select=select)
    if out.bins is not None and mode in (engine.MODE_COUNTED, engine.MODE_CHAINS):
        run.engine.bins(*out.bins)          # the page's timeline: stacks kept apart per slice
    sink = out.writer.engine_sink() if mode == engine.MODE_FILE else None
    if sink is not None:                    # the engine writes the records to the file itself
        run.engine.sink(*sink)
    tick = _progress(perf, args.quiet)
    try:
        for chunk in run.chunks():
            if mode == engine.MODE_FILE:
                if sink is not None:
                    out.writer.engine_wrote(run.engine.sunk())
                if chunk.__class__ is bytes:
                    out.writer.write_kept(chunk)
                elif chunk is not None:     # records the engine passed as they are (AUXTRACE, ...)
                    for item in chunk:
                        if item.__class__ is bytes:
                            out.writer.write_kept(item)
                        else:
                            out.writer.write(item)
            elif mode == engine.MODE_OUTCOMES:
                outcome, record = out.outcome, out.record
                for ev in chunk:
                    if ev.__class__ is tuple:
                        outcome(*ev)
                    else:
                        record(ev)
            elif mode != engine.MODE_NONE:      # events: resolved samples, side-band records, turns
                # a sample's tuple spread into the output's method: its fields are the
                # parameters, named in output/sink.py (no object made per sample)
                add = out.resolved_counted if mode in (engine.MODE_COUNTED, engine.MODE_CHAINS) \
                    else out.resolved_ips
                observe = ctx.observe
                turn = out.turn if mode == engine.MODE_ORDERED else None
                for ev in chunk:
                    cls = ev.__class__
                    if cls is tuple:
                        add(*ev)
                    elif cls is int:
                        turn(ev)
                    else:
                        observe(ev)
            if tick is not None:
                tick.tick(run.offset, *run.engine.progress())
    except FormatError as err:      # damaged input: what was good before it is still written
        _finish_engine(run, out, mode, tick, err)
        raise
    except BaseException:   # interrupted (Ctrl-C, SIGTERM) or failed (a full disk): the output is
        # dropped, not finished (finishing would only fail again and hide the first error)
        if tick is not None:
            tick.done()
        raise
    return _finish_engine(run, out, mode, tick)


def _finish_engine(run, out, mode, tick, error=None):
    rep = run.report()
    if error is not None:
        rep.error = str(error)      # the report says it is of a part only (as PerfFeed.run)
    if mode == engine.MODE_FILE:
        out.writer.engine_wrote(run.engine.sunk())
        for t, n in run.dropped.items():
            out.writer.dropped[t] = out.writer.dropped.get(t, 0) + n
        out.truncated, out.truncated_frames = run.truncated
    out.report = rep
    out.close()
    if tick is not None:
        tick.done()
    return rep


def _run_python(perf, out, args, ctx, select=None):
    """reader -> feed/stitcher -> ``out``; ctx (maps, comms) and the progress line watch the input."""
    tick = _progress(perf, args.quiet)
    feed = None
    seen = [0]

    def progress(rec):
        seen[0] += 1
        if seen[0] & 0xFFF == 0:
            tick.tick(rec.offset, seen[0], feed.report.samples)
    watchers = [w for w in (ctx.observe if ctx else None, progress if tick else None) if w]

    def observe(rec):
        for w in watchers:
            w(rec)
    feed = PerfFeed(perf, out, max_pending=args.max_pending,
                    observe=watchers[0] if len(watchers) == 1 else observe if watchers else None,
                    select=select)
    try:
        feed.run()
    except FormatError:     # damaged input: what was good before it is still written
        _finish(out, feed, tick)
        raise
    except BaseException:   # interrupted (Ctrl-C, SIGTERM) or failed: dropped, not finished
        if tick is not None:
            tick.done()
        raise
    _finish(out, feed, tick)
    return feed.report


def _finish(out, feed, tick):
    out.report = feed.report
    out.close()
    if tick is not None:
        tick.done()


def context(perf, args, warn=None):
    """Maps, comms and symbol options for outputs that name frames; warn(line) for perf's
    warnings (a kernel whose symbols are not found)."""
    return PerfContext(perf, symbols=not args.no_symbols, kallsyms=args.kallsyms, symfs=args.symfs,
                       buildid_dir=args.buildid_dir, warn=warn,
                       inline=not getattr(args, "no_inline", False),
                       demangle=not getattr(args, "no_demangle", False))
