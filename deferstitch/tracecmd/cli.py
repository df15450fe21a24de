"""``deferstitch trace``: the perf side's report, script and folded, for a trace-cmd trace.dat.

Usage:
  deferstitch trace report trace.dat [--json] [--fail-on-unmatched]
  deferstitch trace script trace.dat [--symfs DIR] [-o out.txt]
  deferstitch trace folded trace.dat > out.folded          (flamegraph.pl out.folded)
  deferstitch trace flamegraph trace.dat -o out.html       (interactive; .svg too)
  deferstitch trace report trace.dat --html report.html
  deferstitch trace folded trace.dat --off-cpu             (where tasks wait, in ns; also
                                                            flamegraph and report --off-cpu)
  deferstitch trace trace.dat                              (= report)
  deferstitch trace                                        (= report ./trace.dat)

Deferred user stacks (ftrace option userstacktrace_delay) are stitched by the shared core; the
synchronous user stacks of today's kernels (trace-cmd record -O userstacktrace) are paired with
their events the same way, so the outputs are the same either way. Every buffer of the file is
read (the top one and each ``trace-cmd record -B NAME`` instance), each stitched on its own;
report adds a row per buffer.
"""
import argparse
import json
import sys

from .. import selection
from ..errors import DeferstitchError
from ..output.atomic import Output, refuse_terminal
from ..output.flamegraph import FlameGraph
from ..output import offcpu as offcpu_tables
from ..output.folded import Folded
from ..output.perf_script import PerfScript
from ..output.tables import render, table
from ..stitcher import DEFAULT_MAX_PENDING
from . import engine
from .outputs import Namer, header

COMMANDS = ("report", "script", "folded", "flamegraph")


def Trace(path):
    """The trace.dat at ``path`` (bridge.Trace), loaded by the trace commands only: its import
    is a few ms of every perf-side command's start-up otherwise."""
    from .bridge import Trace as open_trace
    return open_trace(path)


def _feed(feed, trace, events=None, quiet=False):
    """Run the feed over the trace. At damage inside (a record past its page, a format that
    lacks a field, a file cut while read), what was read before it is still stitched and
    reported (``report.error`` says where it stopped; events still waiting for their stack
    count as unmatched at the end); the error is returned. Formats the library could not
    parse are a warning (_formats_warning)."""
    try:
        feed.run(trace if events is None else events)
    except DeferstitchError as err:
        feed.finish()
        feed.report.error = str(err)
        _formats_warning(trace, feed.report, quiet)
        return err
    _formats_warning(trace, feed.report, quiet)
    return None


def _formats_warning(trace, rep, quiet=False):
    """Event formats the library could not parse: in the report, and one line on stderr (their
    events, if any, are read as plain events of an unknown type)."""
    if trace.formats_not_parsed:
        rep.extra["event_formats_not_parsed"] = trace.formats_not_parsed
        if not quiet:
            sys.stderr.write("deferstitch: %s: warning: %d event format(s) in the file did not parse; "
                             "their events are counted under ftrace_anomalies\n"
                             % (trace.path, trace.formats_not_parsed))


def cmd_trace(args):
    try:
        cmd, path = _split(args.what)
    except DeferstitchError as err:         # a usage error: the usage and the hint to --help
        args.trace_parser.error(str(err))
    check_options(args, cmd, args.trace_parser)
    args.select = selection.from_args(args, lambda: _no_sample_times(path))
    if cmd == "report":
        title = "%s: deferred user stack stitching (ftrace)" % path
        if args.html:
            from ..output.report_page import Timeline, page
            timeline = Timeline()
            rep, waits = _report(path, args, timeline)
            with Output(args.html, inputs=[path]) as f:
                f.write(page(rep, timeline, title))
        else:
            rep, waits = _report(path, args)
        if args.json:
            doc = rep.to_json()
            if waits is not None:
                doc["off_cpu"] = offcpu_tables.to_json(waits)
            print(json.dumps(doc, indent=1))
        else:
            sys.stdout.write(render(rep, title))
            sys.stdout.write(buffers_table(rep))
            unnamed = rep.extra.get("unnamed_user_frames")
            if unnamed:
                sys.stdout.write("\nuser frames left unnamed (printed as path+0xoffset): %d (%s)\n" % (
                    sum(unnamed.values()), ", ".join("%s: %d" % kv for kv in unnamed.items())))
            if waits is not None:
                sys.stdout.write("\n" + offcpu_tables.tables(waits))
        if rep.error is not None:           # printed above for what was read; exit 2
            raise DeferstitchError(rep.error)
        return 1 if args.fail_on_unmatched and rep.total_unmatched else 0
    if cmd == "flamegraph":
        refuse_terminal(args.output, "a flame graph's HTML")
    with Trace(path) as trace:
        if args.off_cpu:                    # a file without sched_switch fails before any output
            from .offcpu import switch_types_or_fail
            switch_types_or_fail(trace)
        with Output(args.output, inputs=[path]) as f:                   # replaced when whole
            err = _write(cmd, trace, path, args, f)
    if err is not None:                     # the good part is written; exit 2
        raise err
    return 0


def _no_sample_times(path):
    raise selection.SelectionError("%s: a trace.dat records no first and last sample time, which "
                                   "percent slices of --time are measured from: give seconds "
                                   "(START,STOP)" % path)


def _write(cmd, trace, path, args, f):
    """script, folded or flamegraph of ``trace`` into ``f``; the error that stopped the feed at
    damage, else None. --off-cpu: each wait of a sched_switch weighted by its ns (offcpu.py)."""
    namer = _namer(trace, args)
    weight = "ns" if args.off_cpu else "samples"
    if cmd == "flamegraph":
        kind = "Off-CPU Time " if args.off_cpu else ""
        out = FlameGraph(f, None, args.output, title=args.title or "%sFlame Graph: %s" % (kind, path),
                         width=args.width, inverted=args.inverted, weight=weight, namer=namer)
    elif cmd == "script":
        out = PerfScript(f, None, args.max_stack, namer=namer, header=header)
    else:
        out = Folded(f, None, weight, namer=namer)
    if args.off_cpu:
        from .offcpu import TraceOffCpu
        out = TraceOffCpu(out, trace, args.preempted)
    feed = engine.feed(trace, sample=out.named, max_pending=args.max_pending, python=args.off_cpu,
                       select=args.select, evidence=args.off_cpu)
    namer.recorded = feed.paths
    err = _feed(feed, trace, quiet=args.quiet)
    out.close()
    return err


def _namer(trace, args):
    """The Namer of a command: the perf side's symbol options, and its warnings on stderr."""
    def warn(line):
        if not args.quiet:
            sys.stderr.write(line + "\n")
    return Namer(trace, symfs=args.symfs, symbols=not args.no_symbols,
                 demangle=not args.no_demangle, inline=not args.no_inline,
                 buildid_dir=args.buildid_dir, warn=warn)


def buffers_table(rep):
    """A row per trace buffer (top, then each ``-B`` instance) when the file has instances:
    its stitching is its own (reader.py), and the tables above add the buffers up (their CPU
    numbers too)."""
    bufs = rep.extra.get("buffers") or {}
    if len(bufs) < 2:
        return ""
    reasons = sorted({r for b in bufs.values() for r in b["unmatched"]})
    rows = [[name, b["samples"], b["stitched"], b["passed"]] + [b["unmatched"].get(r, 0) for r in reasons]
            + [b["deferred_records"], b["lost_records"]] for name, b in bufs.items()]
    return "\n" + table(rows, ["buffer", "samples", "stitched", "passed"] + reasons
                        + ["stacks", "missed-event notices"]) + "\n"


def _report(path, args, timeline=None):
    """The report of a trace.dat, with the user frames that would stay unnamed (see Namer)
    counted by reason; ``timeline`` (report --html) gets the samples and missed-event marks.
    With --off-cpu its waits too (tracecmd/offcpu.TraceOffCpu), else None."""
    with Trace(path) as trace:
        waits = None
        if args.off_cpu:                    # a file without sched_switch: one line, exit 2
            from .offcpu import TraceOffCpu
            waits = TraceOffCpu(None, trace, args.preempted)
        namer = _namer(trace, args)

        def stitched(frames, n):
            for where, off in frames:
                namer.user(where, off, n)

        def sample(s):
            if timeline is not None and s.chosen:
                timeline.add(s.time, s.cpu, s.tid, s.comm, s.outcome if s.reason is None else s.reason)
            if waits is not None:       # every sample: a switch left out still ends others' waits
                waits.named(s)

        def watched():
            for ev in trace:
                if ev.missed:
                    timeline.lost_notice(ev.ts)
                yield ev
        # --html: the timeline's missed-event marks come from the Python feed's events;
        # --off-cpu: the waits from each sample's record (the Python feed's)
        python = timeline is not None or waits is not None
        feed = engine.feed(trace, stitched=stitched, sample=sample if python else None,
                           max_pending=args.max_pending, python=python, select=args.select,
                           evidence=waits is not None)
        namer.recorded = feed.paths
        _feed(feed, trace, watched() if timeline is not None else None, quiet=args.quiet)
        if waits is not None:
            waits.close()
    feed.report.extra["unnamed_user_frames"] = dict(sorted(namer.unnamed.items()))
    return feed.report, waits


def _split(what):
    """(command, file) from ``report FILE``, ``FILE report`` or ``FILE``."""
    if not what:
        return "report", "trace.dat"
    if len(what) > 2:
        raise DeferstitchError("one command and one trace.dat, not %d arguments" % len(what))
    if len(what) == 1:
        return (what[0], "trace.dat") if what[0] in COMMANDS else ("report", what[0])
    a, b = what
    if a in COMMANDS:
        return a, b
    if b in COMMANDS:
        return b, a
    raise DeferstitchError("%r is not one of %s" % (a, ", ".join(COMMANDS)))


# The trace options: (flags, argparse keywords, the commands they are for). The trace parser
# takes them all (a command and its file come in either order); `trace CMD --help` and a wrong
# option show CMD's own usage, built from the same table.
OPTIONS = [
    (("-q", "--quiet"), dict(action="store_true", help="no warning on stderr (errors still)"), COMMANDS),
    (("--max-pending",), dict(type=int, default=DEFAULT_MAX_PENDING, metavar="N",
                              help="events waiting for their stack at most (default %(default)d); "
                                   "the oldest beyond are reported as evicted"), COMMANDS),
    (("--json",), dict(action="store_true", help="one JSON object"), ("report",)),
    (("--fail-on-unmatched",), dict(action="store_true", help="exit 1 if any event is unmatched"),
     ("report",)),
    (("--html",), dict(metavar="OUT.html", help="also write the report as a page (tables, a bar "
                                                "per reason, a timeline)"), ("report",)),
    (("--off-cpu",), dict(action="store_true", help="where tasks wait: each sched:sched_switch "
                                                     "event's stack weighted by the ns until its "
                                                     "task ran again (report: per thread, by "
                                                     "state, and how each wait ended)"),
     ("report", "folded", "flamegraph")),
    (("--preempted",), dict(action="store_true", help="with --off-cpu: count preemptions "
                                                      "(prev_state R) as waits too"),
     ("report", "folded", "flamegraph")),
    (("--title",), dict(help="the title (default: Flame Graph: FILE)"), ("flamegraph",)),
    (("--width",), dict(type=int, default=1200, help="width in pixels (default %(default)d)"),
     ("flamegraph",)),
    (("--inverted",), dict(action="store_true", help="an icicle graph: roots at the top"),
     ("flamegraph",)),
    (("-o", "--output"), dict(help="output file (default or -: stdout; flamegraph: .svg for SVG, "
                                   "else HTML)"), ("script", "folded", "flamegraph")),
    (("--symfs",), dict(metavar="DIR", help="user binaries under DIR are the traced ones (else "
                                            "only a file here with the recorded inode and dev "
                                            "names frames)"), COMMANDS),
    (("--no-symbols",), dict(action="store_true", help="raw addresses and offsets, no names"),
     COMMANDS),
    (("--buildid-dir",), dict(metavar="DIR", help="perf's build-id cache, searched for the traced "
                                                  "files' debug files by their build id (default: "
                                                  "DIR/.debug with --symfs DIR, else ~/.debug)"),
     ("script", "folded", "flamegraph")),
    (("--no-inline",), dict(action="store_true", help="leave out the calls inlined at each "
                                                      "address, as perf script --no-inline"),
     ("script", "folded", "flamegraph")),
    (("--no-demangle",), dict(action="store_true", help="C++, Rust, OCaml and Java names as they "
                                                        "are in the binary, as perf --no-demangle"),
     ("script", "folded", "flamegraph")),
    (("--max-stack",), dict(type=int, default=127, help="frames per event (default %(default)d)"),
     ("script",)),
]
OPTIONS += [(flags, kw, COMMANDS) for flags, kw in selection.OPTIONS]     # perf's selection
ABOUT = {
    "report": "what was stitched, what not, and why, for a trace.dat",
    "script": "stitched events in perf script's layout: kernel frames, then path+offset",
    "folded": "FlameGraph folded stacks of a trace.dat",
    "flamegraph": "an interactive flame graph of a trace.dat: one HTML (or .svg) file",
}


def command_parser(cmd, parser_class=argparse.ArgumentParser):
    """The parser of ``trace CMD`` alone: its usage and help (the trace parser does the parsing)."""
    cp = parser_class(prog="deferstitch trace %s" % cmd, description=ABOUT[cmd])
    cp.add_argument("file", nargs="?", metavar="FILE.dat", help="the trace.dat (default ./trace.dat)")
    for flags, kw, cmds in OPTIONS:
        if cmd in cmds:
            cp.add_argument(*flags, **kw)
    return cp


def register(sub):
    """Add the ``trace`` subcommand to the main parser's subparsers."""
    sp = sub.add_parser("trace", help="the same outputs for a trace-cmd trace.dat (ftrace)",
                        usage="deferstitch trace {report,script,folded,flamegraph} FILE.dat [options]",
                        description=__doc__.split("\n")[0].replace("``", ""),
                        epilog=__doc__.split("\n", 2)[2] + "\n'deferstitch trace CMD --help': "
                        "the options of CMD.", add_help=False,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("what", nargs="*", metavar="{report,script,folded,flamegraph} FILE.dat",
                    help="what to print (default report) and the trace.dat (default ./trace.dat)")
    sp.add_argument("-h", "--help", action="store_true", help="this help, or with a command its own")
    for flags, kw, _cmds in OPTIONS:
        sp.add_argument(*flags, **kw)
    sp.intermixed = True
    sp.usage_for = lambda args: next((command_parser(a, type(sp)) for a in args if a in COMMANDS), sp)
    sp.set_defaults(func=cmd_trace, trace_parser=sp)
    return sp


def check_options(args, cmd, parser):
    """``trace CMD --help`` prints CMD's help; an option given that CMD has no use for is an
    error with CMD's usage."""
    if args.help:
        if args.what:
            command_parser(cmd).print_help()
        else:
            parser.print_help()
        parser.exit(0)
    for flags, kw, cmds in OPTIONS:
        dest = kw.get("dest") or flags[-1].lstrip("-").replace("-", "_")
        if cmd not in cmds and getattr(args, dest) != kw.get("default", False if
                                                             kw.get("action") == "store_true" else None):
            command_parser(cmd, type(parser)).error("%s is not an option of trace %s" % (flags[-1], cmd))
    if args.preempted and not args.off_cpu:
        command_parser(cmd, type(parser)).error("--preempted counts preemptions as waits: it goes "
                                                "with --off-cpu")
