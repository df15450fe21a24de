"""``deferstitch trace``: the perf side's report, script and folded, for a trace-cmd trace.dat.

Usage:
  deferstitch trace report trace.dat [--json] [--fail-on-unmatched]
  deferstitch trace script trace.dat [--symfs DIR] [-o out.txt]
  deferstitch trace folded trace.dat > out.folded          (flamegraph.pl out.folded)
  deferstitch trace trace.dat                              (= report)

Deferred user stacks (ftrace option userstacktrace_delay) are stitched by the shared core; the
synchronous user stacks of today's kernels (trace-cmd record -O userstacktrace) are paired with
their events the same way, so the outputs are the same either way.
"""
import json
import sys

from ..errors import DeferstitchError
from ..output.tables import render
from ..stitcher import DEFAULT_MAX_PENDING
from .bridge import Trace
from .outputs import Folded, Namer, Script
from .reader import FtraceFeed

COMMANDS = ("report", "script", "folded")


def _open_out(path):
    return sys.stdout if path in (None, "-") else open(path, "w")


def run_feed(path, out=None, max_pending=DEFAULT_MAX_PENDING, resolved=None, stack=None,
             on_damage=None):
    """Read trace.dat ``path`` through the shared core; ``out.sample`` in time order. Damaged
    or cut input raises its one-line error after ``on_damage(report)`` has seen (and ``out``
    has written) what was read before it."""
    with Trace(path) as trace:
        feed = FtraceFeed(resolved=resolved, sample=out.sample if out else None, stack=stack,
                          max_pending=max_pending, long_size=trace.long_size)
        err = _drive(feed, trace)
        _formats_warning(trace, feed.report)
        if out is not None:
            out.close()
        if err is not None:
            if on_damage is not None:
                on_damage(feed.report)
            raise err
        return feed.report, trace


def _formats_warning(trace, rep):
    """Event formats the library could not parse: in the report, and one line on stderr (their
    events, if any, are read as plain events of an unknown type)."""
    if trace.formats_not_parsed:
        rep.extra["event_formats_not_parsed"] = trace.formats_not_parsed
        sys.stderr.write("deferstitch: %s: warning: %d event format(s) in the file did not parse; "
                         "their events are counted under ftrace_anomalies\n"
                         % (trace.path, trace.formats_not_parsed))


def _drive(feed, trace):
    """Feed every event; at damage, finish with the events read before it (events still
    waiting for their stack count as unmatched at the end) and return the error."""
    try:
        feed.run(trace)
    except DeferstitchError as err:
        feed.finish()
        feed.report.extra["incomplete"] = str(err)
        return err
    return None


def cmd_trace(args):
    cmd, path = _split(args.what)
    if cmd == "report":
        def show(rep):
            if args.json:
                print(json.dumps(rep.to_json(), indent=1))
            else:
                sys.stdout.write(render(rep, "%s: deferred user stack stitching (ftrace)" % path))
            sys.stdout.flush()
        rep, _t = run_feed(path, max_pending=args.max_pending, on_damage=show)
        show(rep)
        return 1 if args.fail_on_unmatched and rep.total_unmatched else 0
    f = _open_out(args.output)
    with Trace(path) as trace:
        namer = Namer(trace, symfs=args.symfs, symbols=not args.no_symbols)
        out = Script(f, namer, args.max_stack) if cmd == "script" else Folded(f, namer)
        feed = FtraceFeed(sample=out.sample, max_pending=args.max_pending, long_size=trace.long_size)
        err = _drive(feed, trace)
        _formats_warning(trace, feed.report)
        out.close()             # what was read before any damage
    f.flush()
    if err is not None:
        raise err
    return 0


def _split(what):
    """(command, file) from ``report FILE``, ``FILE report`` or ``FILE``."""
    if not what or len(what) > 2:
        raise DeferstitchError("usage: deferstitch trace {report,script,folded} FILE.dat")
    if len(what) == 1:
        return (what[0], "trace.dat") if what[0] in COMMANDS else ("report", what[0])
    a, b = what
    if a in COMMANDS:
        return a, b
    if b in COMMANDS:
        return b, a
    raise DeferstitchError("trace: %r is not one of %s" % (a, ", ".join(COMMANDS)))


def register(sub):
    """Add the ``trace`` subcommand to the main parser's subparsers."""
    sp = sub.add_parser("trace", help="the same outputs for a trace-cmd trace.dat (ftrace)",
                        usage="deferstitch trace {report,script,folded} FILE.dat [options]",
                        description=__doc__.split("\n")[0].replace("``", ""),
                        epilog=__doc__.split("\n", 2)[2],
                        formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    sp.add_argument("what", nargs="+", metavar="{report,script,folded} FILE.dat",
                    help="what to print (default report) and the trace.dat (default ./trace.dat)")
    sp.add_argument("--max-pending", type=int, default=DEFAULT_MAX_PENDING, metavar="N",
                    help="events waiting for their stack at most (default %(default)d); the oldest "
                         "beyond are reported as evicted")
    sp.add_argument("--json", action="store_true", help="report: one JSON object")
    sp.add_argument("--fail-on-unmatched", action="store_true",
                    help="report: exit 1 if any event is unmatched")
    sp.add_argument("-o", "--output", help="script/folded: output file (default or -: stdout)")
    sp.add_argument("--symfs", metavar="DIR", help="look for user binaries under DIR")
    sp.add_argument("--no-symbols", action="store_true", help="raw addresses and offsets, no names")
    sp.add_argument("--max-stack", type=int, default=127, help="script: frames per event")
    sp.set_defaults(func=cmd_trace)
    return sp
