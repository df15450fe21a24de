"""deferstitch — whole stacks from Linux deferred user callchains, with what could not be stitched.

Examples:
  deferstitch info perf.data                      header, attrs, features, records per type
  deferstitch stitch perf.data -o stitched.data   a file perf 6.1 and 7.x read, stacks whole
  deferstitch report perf.data [--json]           what was stitched, and why the rest was not
  deferstitch script perf.data                    samples in perf script's layout
  deferstitch folded perf.data > out.folded       for flamegraph.pl
  deferstitch export perf.data --format speedscope -o out.speedscope.json
  deferstitch export perf.data --format pprof -o out.pb.gz      pprof -http=: out.pb.gz
  deferstitch folded --off-cpu sched.data         where tasks wait: ns per stack (sched_switch)
  deferstitch diff before.data after.data -o diff.html    a differential flame graph
  perf record -o - --call-graph fp,defer ... | deferstitch folded -

Bad input: one line naming the file and offset, exit status 2.
"""
import argparse
import contextlib
import io
import json
import os
import sys

from . import __version__, pipeline, selection
from .abi import consts as C
from .errors import DeferstitchError, FormatError, OutputError
from .output.atomic import NamedStdout, Output, Terminated, on_sigterm, refuse_terminal
from .output.dso_table import DsoTable
from .output import offcpu, select
from .output.folded import Folded
from .output.offcpu import OffCpuFeed
from .output import script_fields
from .output.perf_script import PerfScript
from .output.stitched_file import StitchedFile
from .output.tables import render, table
from .perfdata.recording import input_files, open_input
from .perfdata.writer import PIPE_ONLY
from .stitcher import DEFAULT_MAX_PENDING
from .symbols.perf_context import MAP_TYPES
from .tracecmd.cli import register as register_trace
from .fleet import register as register_fleet


def cmd_info(args):
    perf = open_input(args.inputs)
    counts = {}
    error = None
    dsos = None if args.no_symbols else DsoTable(perf, args.symfs, args.buildid_dir, args.kallsyms)
    try:
        for rec in perf.records():
            counts[rec.type] = counts.get(rec.type, 0) + 1
            if dsos is not None and rec.type in MAP_TYPES:
                dsos.observe(rec)
    except FormatError as err:
        error = err
    info = {
        "file": args.input, "mode": "pipe" if perf.pipe else "file",
        "endian": "little" if perf.endian == "<" else "big",
        "attrs": [{"name": e.name, "type": e.attr.type, "config": e.attr.config, "size": len(e.attr.raw),
                   "sample_type": C.sample_type_names(e.attr.sample_type),
                   "sample_id_all": e.attr.sample_id_all, "defer_callchain": e.attr.defer_callchain,
                   "defer_output": e.attr.defer_output, "ids": len(e.ids)} for e in perf.evlist.entries],
        "features": {C.FEATURE_NAMES.get(b, "FEATURE_%d" % b): perf.feature(b) for b in sorted(perf.features)},
        "records": {C.record_name(t): n for t, n in sorted(counts.items())},
        "total_records": sum(counts.values()),
        "dsos": dsos.rows() if dsos is not None else None,
    }
    if perf.header is not None:
        h = perf.header
        info["header"] = {"version": perf.version, "attr_size": h.attr_size, "attrs": list(h.attrs),
                          "data": list(h.data)}
    if perf.warning is not None:
        info["warning"] = perf.warning
    if args.json:
        print(json.dumps(info, indent=1, default=str))
    else:
        print("%s: %s mode, %s endian" % (args.input, info["mode"], info["endian"]))
        if "header" in info:
            print("header: %sattr_size %d, attrs at %#x (%d bytes), data at %#x (%d bytes)"
                  % ("v1 (PERFFILE), " if perf.version == 1 else "", h.attr_size, h.attrs.offset,
                     h.attrs.size, h.data.offset, h.data.size))
        if perf.warning is not None:
            print("warning: " + perf.warning)
        print()
        print(table([[a["name"], a["type"], "%#x" % a["config"], a["size"], a["sample_type"],
                      a["sample_id_all"], a["defer_callchain"], a["defer_output"], a["ids"]]
                     for a in info["attrs"]],
                    ["event", "type", "config", "size", "sample_type", "sample_id_all",
                     "defer_callchain", "defer_output", "ids"]))
        print()
        for name, val in info["features"].items():
            if isinstance(val, (list, dict)):
                val = json.dumps(val, default=str)
                val = val if len(val) < 100 else val[:97] + "..."
            print("feature %-16s %s" % (name, "(raw)" if val is None else val))
        print()
        print(table([[n, c] for n, c in info["records"].items()] + [["TOTAL", info["total_records"]]],
                    ["record", "count"]))
        if dsos is not None:
            print()
            print(dsos.text())
    if error is not None:
        raise error
    return 0


def cmd_stitch(args):
    perf = open_input(args.inputs)          # a bad input says so before any output exists
    refuse_terminal(args.output, "a perf.data")
    made = []
    err = None
    # an UnsupportedError (nothing usable written) leaves the old output as it was
    with Output(args.output, binary=True, seekable=True, inputs=input_files(perf)) as f:

        def make(perf, _ctx):
            made.append(StitchedFile(f, perf, compat=not args.native, keep_report=not args.no_report))
            return made[-1]
        try:
            rep, out = pipeline.run(args, make, perf=perf, hint=True)
        except FormatError as e:        # damaged input: what was good before it is written
            err, rep, out = e, None, made[-1]
    if rep is not None and not args.quiet:
        # containers and pipe-only records live on as their contents / header sections
        dropped = ", ".join("%d %s" % (n, C.record_name(t)) for t, n in sorted(out.writer.dropped.items())
                            if t not in PIPE_ONLY)
        cut = ("; %d stitched samples cut to fit perf's 64 KiB record size (%d user frames left out)"
               % (out.truncated, out.truncated_frames) if out.truncated else "")
        sys.stderr.write("deferstitch: %d samples: %d stitched (%d after their stack), %d passed, "
                         "%d unmatched%s%s\n" % (rep.samples, rep.stitched, rep.stitched_after_stack,
                                                 rep.passed, rep.total_unmatched,
                                                 "; left out " + dropped if dropped else "", cut))
    if err is not None:
        raise err
    return 0


def cmd_report(args):
    made = []
    err = None
    with contextlib.ExitStack() as outputs:         # --html: replaced only when whole
        page = outputs.enter_context(Output(args.html, inputs=args.inputs)) if args.html else None

        def make(perf, _ctx):
            if page is None:
                out = pipeline.Null()
            else:
                from .output.report_page import ReportPage
                out = ReportPage(page, perf, "%s: deferred callchain stitching" % args.input)
            made.append(OffCpuFeed(out, perf, args.preempted) if args.off_cpu else out)
            return made[-1]
        try:
            rep, _out = pipeline.run(args, make, hint=True)
        except FormatError as e:     # damaged input: the report of what was read, then exit 2
            if not made or made[-1].report is None:
                raise
            err, rep = e, made[-1].report
    if args.json:
        doc = rep.to_json()
        if args.off_cpu:
            doc["off_cpu"] = offcpu.to_json(made[-1])
        print(json.dumps(doc, indent=1))
    else:
        sys.stdout.write(render(rep, "%s: deferred callchain stitching" % args.input))
        if args.off_cpu:
            sys.stdout.write("\n" + offcpu.tables(made[-1]))
    if err is not None:
        sys.stdout.flush()
        raise err
    return 1 if args.fail_on_unmatched and rep.total_unmatched else 0


def _text_output(args, make, binary=False, write=True):
    """Run an output that names frames (it needs the maps and comms of the stream); the file
    replaces ``-o`` only when whole (output/atomic.py). With --off-cpu or --wall-clock the
    output is fed waits (output/offcpu.py), with --event one event's samples (output/select.py).
    ``write=False``: no file, ``make(None, ctx)`` keeps what it counts (diff's sides)."""
    perf = open_input(args.inputs)          # a bad input says so before any output exists
    waits = getattr(args, "off_cpu", False) or getattr(args, "wall_clock", False)
    choose = plan = None
    if waits:
        plan = offcpu.plan_or_fail(perf, args.wall_clock)
        offcpu.warn_estimate(plan, perf.path, args.quiet)
    elif getattr(args, "event", None) is not None:
        choose = select.entries_named(perf, args.event)
    elif hasattr(args, "event"):
        select.warn_mixed(perf, args.quiet)

    def wrap(out):
        if waits:
            return OffCpuFeed(out, perf, args.preempted, args.wall_clock, plan)
        return select.EventSelect(out, choose) if choose is not None else out
    if not write:
        pipeline.run(args, lambda perf, ctx: wrap(make(None, ctx)), symbols=True, perf=perf)
        return 0
    with Output(args.output, binary=binary, inputs=input_files(perf)) as f:
        pipeline.run(args, lambda perf, ctx: wrap(make(f, ctx)), symbols=True, perf=perf)
    return 0


def cmd_export(args):
    if args.format == "pprof":
        from .output.pprof import Pprof
        refuse_terminal(args.output, "a gzip'd pprof profile")
        time = "wall" if args.wall_clock else "off-cpu" if args.off_cpu else None
        return _text_output(args, lambda f, ctx: Pprof(f, ctx, time=time), binary=True)
    from .output.speedscope import Speedscope
    refuse_terminal(args.output, "speedscope's JSON")
    name = os.path.basename(args.input)
    return _text_output(args, lambda f, ctx: Speedscope(f, ctx, name, _weight(args)))


def cmd_script(args):
    fields = script_fields.request(args.fields) if args.fields else None
    return _text_output(args, lambda f, ctx: PerfScript(f, ctx, args.max_stack, fields=fields,
                                                        ns=args.ns))


def cmd_flamegraph(args):
    from .output.flamegraph import FlameGraph
    refuse_terminal(args.output, "a flame graph's HTML")
    kind = "Off-CPU Time " if args.off_cpu else "Wall-Clock Time " if args.wall_clock else ""

    def title(perf):
        guess = (" (estimates: sched_switch sampled by frequency)"
                 if _waits(args) and offcpu.Plan(perf).estimate else "")
        return args.title or "%sFlame Graph: %s%s" % (kind, os.path.basename(args.input), guess)
    return _text_output(args, lambda f, ctx: FlameGraph(
        f, ctx, args.output, title=title(ctx.perf), width=args.width, inverted=args.inverted,
        weight=_weight(args), times=ctx.perf.sample_times()))


def cmd_folded(args):
    return _text_output(args, lambda f, ctx: Folded(f, ctx, _weight(args)))


def cmd_diff(args):
    """Two perf.data or two trace.dat (BASE's magic says which; NEW then fails as the wrong
    kind), each side counted by its folded run."""
    from .output import diff
    from .tracecmd.cli import folded_stacks
    from .tracecmd.headers import is_trace_dat
    if args.base == args.new == "-":
        raise DeferstitchError("-: BASE and NEW cannot both be standard input")
    trace = is_trace_dat(args.base)
    is_trace_dat(args.new)          # a NEW that cannot be read fails before BASE is run
    return diff.run(args, folded_stacks if trace else _folded_stacks, _weight(args))


def _folded_stacks(args, path):
    """The stacks of one perf.data as ``folded`` counts them, every option of ``args`` applied
    (diff's sides)."""
    side = argparse.Namespace(**vars(args))
    side.input, side.inputs = path, [path]
    made = []
    _text_output(side, lambda f, ctx: made.append(Folded(f, ctx, _weight(side))) or made[-1], write=False)
    return made[-1].stacks


def _waits(args):
    return args.off_cpu or args.wall_clock


def _weight(args):
    """Weights by nanoseconds for off-CPU time and the wall-clock view, else as --weight says."""
    return "ns" if _waits(args) else args.weight


def _count(text):
    """A whole number >= 0 (argparse type)."""
    n = int(text)
    if n < 0:
        raise argparse.ArgumentTypeError("must be 0 or more, not %d" % n)
    return n


class CommandParser(argparse.ArgumentParser):
    """argparse, with each (sub)command answering for its own arguments: a wrong option is
    reported with the usage of the command it was given to (not the top level's), and every
    error ends with a hint to that command's --help. Subparsers inherit the class.
    ``usage_for(args)``, when set, names the parser whose usage an error shows (trace: the
    usage of the command among its arguments)."""

    usage_for = None
    intermixed = False      # positionals may follow options (trace: its command and its file)
    _parsing = False

    def parse_known_args(self, args=None, namespace=None):
        if self._parsing:               # the passes of parse_known_intermixed_args
            return super().parse_known_args(args, namespace)
        self._args = sys.argv[1:] if args is None else list(args)
        self._parsing = True
        try:
            parse = self.parse_known_intermixed_args if self.intermixed else super().parse_known_args
            namespace, extra = parse(args, namespace)
        finally:
            self._parsing = False
        if extra:
            self.error("unrecognized arguments: %s" % " ".join(extra))
        return namespace, extra

    def error(self, message):
        shown = self.usage_for(getattr(self, "_args", [])) if self.usage_for else self
        shown.print_usage(sys.stderr)
        self.exit(2, "%s: error: %s\nTry '%s --help' for more information.\n"
                  % (shown.prog, message, shown.prog))


def build_parser():
    p = CommandParser(prog="deferstitch", description=__doc__.split("\n")[0],
                      epilog=__doc__.split("\n", 2)[2],
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version="deferstitch " + __version__)
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", required=True)

    def add(name, func, help_, stitches=True, inputs=None):
        """A subcommand reading a perf.data; ``stitches``: it runs the stitcher (info does not);
        ``inputs``: the names of the files it takes (diff's two), else one, ``input``."""
        sp = sub.add_parser(name, help=help_, description=help_)
        if inputs is None:
            sp.add_argument("input", nargs="*", default=["perf.data"],
                            help="the perf.data (default ./perf.data), - for standard input, a perf "
                                 "record --threads directory, or the files of one --switch-output "
                                 "recording (several, a directory or a glob of them: one recording)")
        for which in inputs or ():
            sp.add_argument(which, metavar=which.upper(),
                            help="the %s profile: a perf.data (- for standard input) or a trace.dat"
                            % ("first (before)" if which == "base" else "second (after)"))
        if stitches:
            sp.add_argument("-q", "--quiet", action="store_true",
                            help="no progress, summary, warning or hint on stderr (errors still)")
            sp.add_argument("--max-pending", type=_count, default=DEFAULT_MAX_PENDING, metavar="N",
                            help="samples waiting for their stack at most (default %(default)d); "
                                 "the oldest beyond are reported as evicted")
            selection.add_options(sp)
        sp.set_defaults(func=func, command_parser=sp)
        return sp

    def symbol_options(sp):
        sp.add_argument("--no-symbols", action="store_true", help="raw addresses, no names")
        sp.add_argument("--no-inline", action="store_true",
                        help="leave out the calls inlined at each address (read from DWARF), as perf")
        sp.add_argument("--no-demangle", action="store_true",
                        help="C++, Rust, OCaml and Java names as they are in the binary, as perf "
                             "--no-demangle")
        sp.add_argument("--kallsyms", metavar="FILE",
                        help="kernel symbols (default: /proc/kallsyms if recorded on this kernel)")
        sp.add_argument("--symfs", metavar="DIR", help="look for binaries under DIR, as perf --symfs")
        sp.add_argument("--buildid-dir", metavar="DIR", help="perf's build-id cache (default: DIR/.debug with "
                        "--symfs DIR, as perf; else ~/.debug)")

    def time_options(sp):
        sp.add_argument("--off-cpu", action="store_true",
                        help="where tasks wait: each sched_switch sample's stack weighted by the ns "
                             "until its task ran again (record -e sched:sched_switch "
                             "--call-graph fp,defer)")
        sp.add_argument("--wall-clock", action="store_true",
                        help="on-CPU samples (cpu-clock, task-clock: their period in ns) and "
                             "off-CPU time in one profile, under [on-cpu] and [off-cpu]")
        sp.add_argument("--preempted", action="store_true",
                        help="with --off-cpu: count preemptions as waits too (default: only "
                             "switch-outs where the task blocked)")
        sp.add_argument("--event", metavar="NAME",
                        help="only the samples of this event (as perf evlist names it), where the "
                             "file holds several")

    def flame_options(sp):
        sp.add_argument("-o", "--output", help="OUT.html, or OUT.svg for SVG (default or -: HTML on stdout)")
        sp.add_argument("--title", help="the graph's title (default: Flame Graph: INPUT)")
        sp.add_argument("--width", type=int, default=1200, help="width in pixels (default %(default)d)")
        sp.add_argument("--weight", choices=("samples", "period"), default="samples",
                        help="frame widths by sample count or by period")
        sp.add_argument("--inverted", action="store_true", help="an icicle graph: roots at the top")

    sp = add("info", cmd_info, "header, attrs, features, records per type and the files that name each dso",
             stitches=False)
    sp.add_argument("--json", action="store_true", help="one JSON object")
    symbol_options(sp)
    sp = add("stitch", cmd_stitch, "write a perf.data with whole stacks and no deferred records")
    sp.add_argument("-o", "--output", help="output file (default or -: stdout)")
    sp.add_argument("--native", action="store_true",
                    help="keep attrs as they are (perf 7.x only) instead of what perf 6.1 reads")
    sp.add_argument("--no-report", action="store_true",
                    help="leave the stitch report out of the file: for `perf inject` (perf 7.2's "
                         "crashes on a header feature it does not know), e.g. then perf inject --jit")
    sp = add("report", cmd_report, "what was stitched, what not, and why")
    sp.add_argument("--json", action="store_true", help="one JSON object")
    sp.add_argument("--fail-on-unmatched", action="store_true", help="exit 1 if any sample is unmatched")
    sp.add_argument("--html", metavar="OUT.html",
                    help="also write the report as a page: tables, a bar per reason, a timeline")
    sp.add_argument("--off-cpu", action="store_true",
                    help="also where tasks waited: per thread, off-CPU time by task state, on-CPU "
                         "samples, and how each wait was seen to end")
    sp.add_argument("--preempted", action="store_true",
                    help="with --off-cpu: count preemptions as waits too")
    sp = add("script", cmd_script, "stitched samples in perf script's layout")
    symbol_options(sp)
    sp.add_argument("-o", "--output", help="output file (default or -: stdout)")
    sp.add_argument("--max-stack", type=int, default=127, help="frames per sample (perf's default 127)")
    sp.add_argument("-F", "--fields", action="append", metavar="FIELDS",
                    help="perf script's -F: comm,tid,pid,time,cpu,event,trace,ip,sym,dso,symoff,"
                         "period; +f/-f change the default; hw:, sw:, trace: one event type")
    sp.add_argument("--ns", action="store_true", help="times in nanoseconds (perf's --ns)")
    sp = add("folded", cmd_folded, "FlameGraph folded stacks")
    symbol_options(sp)
    sp.add_argument("-o", "--output", help="output file (default or -: stdout)")
    sp.add_argument("--weight", choices=("samples", "period"), default="samples",
                    help="count each stack by samples (default) or by their period")
    time_options(sp)
    sp = add("flamegraph", cmd_flamegraph, "an interactive flame graph: one HTML (or .svg) file")
    symbol_options(sp)
    flame_options(sp)
    time_options(sp)
    sp = add("export", cmd_export, "a profile for other viewers: speedscope JSON or pprof")
    symbol_options(sp)
    sp.add_argument("--format", choices=("speedscope", "pprof"), required=True,
                    help="speedscope's file format, or pprof's gzip'd profile.proto")
    sp.add_argument("-o", "--output", help="output file (default: stdout)")
    sp.add_argument("--weight", choices=("samples", "period"), default="samples",
                    help="speedscope weights (pprof carries both)")
    time_options(sp)
    sp = add("diff", cmd_diff, "two profiles compared: difffolded's stacks, a differential flame "
             "graph, or pprof -diff_base's profile", inputs=("base", "new"))
    symbol_options(sp)
    sp.add_argument("-o", "--output", help="output file (default or -: stdout); .html or .svg: a "
                    "differential flame graph")
    sp.add_argument("--format", choices=("folded", "flamegraph", "pprof"),
                    help="difffolded.pl's `stack base new` lines (default), the flame graph (default "
                         "for -o .html/.svg), or a pprof profile with BASE negated and labelled "
                         "pprof::base, as pprof -diff_base BASE NEW")
    sp.add_argument("-n", "--normalize", action="store_true",
                    help="scale BASE's counts to NEW's total, as difffolded.pl -n")
    sp.add_argument("-s", "--strip-hex", action="store_true",
                    help="hex numbers as 0x..., as difffolded.pl -s (addresses that differ between runs)")
    sp.add_argument("--weight", choices=("samples", "period"), default="samples",
                    help="count each stack by samples (default) or by their period")
    sp.add_argument("--title", help="the graph's title (default: Differential Flame Graph: BASE -> NEW)")
    sp.add_argument("--width", type=int, default=1200, help="width in pixels (default %(default)d)")
    sp.add_argument("--inverted", action="store_true", help="an icicle graph: roots at the top")
    time_options(sp)
    register_trace(sub)      # deferstitch trace ...: the trace.dat side
    register_fleet(sub, symbol_options)     # deferstitch fleet ...: many files on Dask
    return p


def _fields_taken_whole(argv):
    """``script -F -dso``: perf takes a -F value starting with "-" (its -field); argparse would
    take it for an option, so it is handed on as --fields=-dso."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] != ["script"]:
        return argv
    out = []
    it = iter(argv)
    for a in it:
        if a in ("-F", "--fields"):
            value = next(it, None)
            if value is not None and value.startswith("-"):
                out.append("--fields=" + value)
                continue
            out.append(a)
            if value is not None:
                out.append(value)
            continue
        out.append(a)
    return out


def main(argv=None):
    args = build_parser().parse_args(_fields_taken_whole(argv))
    if isinstance(getattr(args, "input", None), list):     # the perf.data commands: one name
        args.inputs = args.input                            # shown, all of them read
        args.input = args.inputs[0] if len(args.inputs) == 1 else "%s .. %s" % (
            args.inputs[0], args.inputs[-1])
    if getattr(args, "preempted", False) and not (getattr(args, "off_cpu", False)
                                                  or getattr(args, "wall_clock", False)):
        # how to count waits, without waits to count: a mistake, as on the trace side
        parser = getattr(args, "command_parser", None)
        if parser is not None:
            parser.error("--preempted counts preemptions as waits: give it with --off-cpu")
    on_sigterm()            # SIGTERM unwinds like Ctrl-C: no half-written output stays
    real = sys.stdout
    if real is not None and real is sys.__stdout__:
        sys.stdout = NamedStdout(real)      # what report and info print: errors in one line
    try:
        status = args.func(args)
        if sys.stdout is not None:
            try:
                sys.stdout.flush()          # report/info print: a full disk is one line too
            except BrokenPipeError:
                raise
            except OSError as err:
                sys.stdout = io.TextIOWrapper(open(os.devnull, "wb"))
                raise OutputError("standard output", err.strerror or str(err)) from None
        return status
    except DeferstitchError as err:
        sys.stderr.write("deferstitch: %s\n" % err)
        return 2
    except BrokenPipeError:
        try:
            sys.stdout = io.TextIOWrapper(open(os.devnull, "wb"))
        except OSError:
            pass
        return 0
    except KeyboardInterrupt:
        return 130
    except Terminated:
        return 143
    finally:
        if isinstance(sys.stdout, NamedStdout):
            sys.stdout = real
