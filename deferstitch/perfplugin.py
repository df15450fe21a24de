"""The `perf script -s perf_scripts/stitch.py` front end: perf's samples, whole, and the report.

perf (7.x) merges deferred callchains itself but leaves unmerged every sample taken after its
entry's stack was written; with --no-merge-callchains it merges none. Either way such a sample
reaches Python as its kernel frames plus a fake last frame holding the cookie. We run the same
stitcher over the same perf.data (the file named on perf's own command line) and, for each
sample perf hands us, look up what the core made of it:

    perf ──process_event(tid, time, frames)──┐
                                             ├─> merged by perf: its frames as they are
    our reader → stitcher (a thread, bounded)┘   cookie frame:   kernel frames + our user frames
                                                                 (or kernel only, with a reason)

The lookup is keyed by (tid, time); our side runs ahead of perf's only as far as perf holds
samples back, through a bounded queue, so memory follows what is pending. A file written by
`deferstitch stitch` carries the report of the stitching in a header section that perf ignores
(feature bit ``REPORT_FEATURE``); on such a file (perf 6.1 reads it) that report is shown.
"""
import json
import os
import queue
import re
import sys
import threading

from . import selection
from .abi import consts as C
from .errors import DeferstitchError, FormatError
from .model import NO_COOKIE
from .output.atomic import Output
from .output import folded
from .output.frames import UNKNOWN, comm_name, frame_lines, frame_name
from .output.sink import Sink
from .output.stitched_file import REPORT_FEATURE
from .output.tables import render
from .perfdata.feed import PerfFeed
from .perfdata.reader import PerfData
from .report import StitchReport
from .symbols.perf_context import PerfContext
from .symbols.resolver import INLINED
from .symbols.vdso import is_vdso

USAGE = """usage: perf script [-i perf.data] -s perf_scripts/stitch.py -- [options]
  --folded          FlameGraph folded stacks instead of perf script's layout
  --report          the report only (no samples)
  --json FILE       the report as JSON into FILE
  -o, --output FILE samples (or folded stacks) into FILE instead of stdout
  --report-to FILE  the report tables into FILE instead of stderr
  --max-pending N   samples waiting for their stack at most (default: the CLI's)"""


def perf_cmdline():
    """perf's own argv (the script runs inside the perf process)."""
    try:
        with open("/proc/self/cmdline", "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def perf_option(argv, short, long_):
    """The value of -x V / -xV / --long V / --long=V on perf's command line (before "--")."""
    if "--" in argv:
        argv = argv[:argv.index("--")]
    for i, a in enumerate(argv):
        if short and a == short and i + 1 < len(argv):
            return argv[i + 1]
        if short and a.startswith(short) and len(a) > 2 and not a.startswith("--"):
            return a[2:]
        if a == long_ and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(long_ + "="):
            return a.split("=", 1)[1]
    return None


def parse_args(args):
    opts = {"folded": False, "report_only": False, "json": None, "output": None,
            "report_to": None, "max_pending": None}
    it = iter(args)
    for a in it:
        if a == "--folded":
            opts["folded"] = True
        elif a == "--report":
            opts["report_only"] = True
        elif a in ("--json", "-o", "--output", "--report-to", "--max-pending"):
            val = next(it, None)
            if val is None:
                raise DeferstitchError("%s needs a value\n%s" % (a, USAGE))
            key = {"-o": "output", "--output": "output", "--json": "json",
                   "--report-to": "report_to", "--max-pending": "max_pending"}[a]
            opts[key] = int(val) if key == "max_pending" else val
        elif a in ("-h", "--help"):
            raise DeferstitchError(USAGE)
        else:
            raise DeferstitchError("unknown option %r\n%s" % (a, USAGE))
    return opts


def perf_version():
    try:
        out = os.popen("'%s' version 2>/dev/null" % os.readlink("/proc/self/exe")).read()
    except OSError:
        return None
    m = re.search(r"(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def session_attrs(path, limit=10000):
    """The attrs of a perf.data; a pipe-mode file declares them in records, so read up to the
    first kernel record."""
    with PerfData.open(path) as perf:
        if not perf.pipe:
            return [e.attr for e in perf.evlist.entries]
        for i, rec in enumerate(perf.records()):
            if rec.type < C.PERF_RECORD_USER_TYPE_START or i > limit:
                break
        return [e.attr for e in perf.evlist.entries]


class _Producer(threading.Thread, Sink):
    """Runs our reader → stitcher over the file; hands samples over in time order (a Sink of
    the Python path: resolved and sample, the rest Sink's stubs)."""

    def __init__(self, perf, ctx, max_pending, select=None):
        super().__init__(daemon=True)
        self.perf, self.ctx = perf, ctx
        self.q = queue.Queue(maxsize=4096)
        self.kw = {"max_pending": max_pending} if max_pending else {}
        self.kw["select"] = select
        self.report = None
        self.error = None

    def resolved(self, s):
        s.comm = self.ctx.comm(s)

    def sample(self, s):
        self.q.put(s)

    def run(self):
        try:
            feed = PerfFeed(self.perf, self, observe=self.ctx.observe, **self.kw)
            self.report = feed.report       # also when the input stops at damage
            feed.run()
        except DeferstitchError as err:
            self.error = err
        except Exception as err:          # never leave perf waiting on a dead thread
            self.error = err
        finally:
            self.q.put(None)


def _inlined_by_perf(frames):
    """perf's Python callchain carries the frames perf adds for inlined calls, but with the dso of
    their map: one is inlined when the next has the same address and offset (perf gives an
    inlined call its holder's start) under another name. Marked as perf script prints them."""
    out = list(frames)
    for i in range(len(out) - 2, -1, -1):
        ip, name, off, dso = out[i]
        nxt = out[i + 1]
        if name is not None and dso is not None and nxt[0] == ip and nxt[2] == off \
                and nxt[1] is not None and nxt[1] != name:
            out[i] = (ip, name, off, INLINED)
    return out


class Plugin:
    def __init__(self, argv=None, cmdline=None):
        self.opts = parse_args(sys.argv[1:] if argv is None else argv)
        cmd = perf_cmdline() if cmdline is None else cmdline
        self.input = perf_option(cmd, "-i", "--input") or "perf.data"
        self.no_merge = "--no-merge-callchains" in cmd
        # every file is opened now (a bad path fails before any work) and replaces its target
        # only when all are whole (output/atomic.py); perf's -i is the input
        inputs = [] if self.input == "-" else [self.input]
        self.files = {k: Output(self.opts[k], inputs=inputs) for k in ("output", "json", "report_to")
                      if self.opts[k]}
        opened = {k: o.open() for k, o in self.files.items()}
        self.out = opened.get("output", sys.stdout)
        self.json_file, self.report_file = opened.get("json"), opened.get("report_to")
        self.ahead = {}           # (tid, time) -> [our samples], pulled but not asked for yet
        self.names = {}           # (pid, ip) -> (sym, off, dso) as perf itself named it
        self.folded = {}
        self.served = {"perf_merged": 0, "we_stitched": 0, "unmatched": 0, "passed": 0, "unknown": 0}
        self.producer = None
        self.file_report = None
        self.exhausted = False
        if self.input == "-" or not os.path.isfile(self.input):
            sys.stderr.write("deferstitch: perf is reading %s, not a file: stitching and the report "
                             "need the perf.data as a file (perf script -i FILE -s ...); showing "
                             "perf's own stacks only\n" % ("a pipe" if self.input == "-" else self.input))
            return
        perf = PerfData.open(self.input)
        raw = perf.features.get(REPORT_FEATURE)
        if raw:
            self.file_report = StitchReport.from_json(json.loads(bytes(raw).decode()))
        ver = perf_version()
        if ver is not None and ver < (6, 19) and any(a.defer_callchain for a in session_attrs(self.input)):
            raise DeferstitchError("perf %d.%d cannot read deferred callchains (Linux 6.19 / perf 6.19 "
                                   "format): run `deferstitch stitch %s -o stitched.data` and give perf "
                                   "that file" % (ver[0], ver[1], self.input))
        argv = cmd[:cmd.index("--")] if "--" in cmd else cmd
        ctx = PerfContext(perf, kallsyms=perf_option(cmd, None, "--kallsyms"),
                          symfs=perf_option(cmd, None, "--symfs"),
                          demangle="--no-demangle" not in argv)   # the names perf gives its own
        # the user frames we add get their inlined calls when perf's Python has pyelftools;
        # else one line says they are left out (Resolver.warn)
        ctx.resolver.warn = lambda line: sys.stderr.write("deferstitch: %s\n" % line)
        self.ctx = ctx
        # perf hands us only the samples its --comms/--pid/--tid/-C/--time chose: the report
        # counts those (selection.py, perf's meaning)
        select = selection.from_args(selection.perf_options(argv, perf_option), perf.sample_times)
        self.producer = _Producer(perf, ctx, self.opts["max_pending"], select)
        self.producer.start()

    # -- matching perf's samples with ours ----------------------------------------------------
    def _pull(self):
        s = self.producer.q.get()
        if s is None:
            self.exhausted = True
            return None
        self.ahead.setdefault((s.tid, s.time), []).append(s)
        return s

    def ours(self, tid, time):
        key = (tid, time)
        while key not in self.ahead and not self.exhausted:
            s = self._pull()
            if s is not None and s.time is not None and time is not None and s.time > time \
                    and key not in self.ahead:
                break            # our side is past it: perf has a sample we do not know
        got = self.ahead.get(key)
        if not got:
            return None
        s = got.pop(0)
        if not got:
            del self.ahead[key]
        return s

    # -- perf's callbacks ---------------------------------------------------------------------
    def event(self, d):
        smp = d.get("sample", {})
        tid, pid, time = smp.get("tid"), smp.get("pid"), smp.get("time")
        chain = d.get("callchain") or []
        frames = []
        for fr in chain:
            sym = fr.get("sym")
            name = sym.get("name") if sym else None
            frames.append((fr.get("ip"), name, fr.get("sym_off", 0) or 0, fr.get("dso")))
        frames = _inlined_by_perf(frames)
        s = self.ours(tid, time) if self.producer is not None else None
        if s is not None and s.cookie == NO_COOKIE:     # perf knows no such chain: kernel part only
            if s.outcome == "stitched":
                frames.extend(f for ip in s.user for f in self._names(pid, ip))
                self.served["we_stitched"] += 1
            else:
                self.served["unmatched"] += 1
        elif s is not None and s.cookie is not None and frames and frames[-1][0] == s.cookie \
                and frames[-1][3] is None:
            frames.pop()                            # the cookie frame perf left in
            if s.outcome == "stitched":
                frames.extend(f for ip in s.user for f in self._names(pid, ip))
                self.served["we_stitched"] += 1
            else:
                self.served["unmatched"] += 1
        elif s is not None and s.cookie is not None:
            self.served["perf_merged"] += 1
        elif s is not None:
            self.served["passed"] += 1
        else:
            self.served["unknown"] += 1
        for i, (ip, name, off, dso) in enumerate(frames):
            if dso is not None and name is not None and dso != INLINED:
                self.names[(pid, ip)] = (name, off, dso)
            elif name is None and dso and (dso.startswith("/tmp/perf-") or is_vdso(dso)) \
                    and self.producer is not None:
                # run-time generated code perf could not name (a jitdump it was not given
                # through perf inject --jit), a [vdso] frame perf's own process's image does
                # not name (another kernel recorded): ours, when we have one
                ours = self.ctx.resolver.frame(pid, ip)
                if ours[0] is not None:
                    frames[i] = (ip,) + ours
        frames = frames[:127]
        if self.opts["report_only"]:
            return
        # our comm (taken when the sample's stack arrived, as perf's merge does) keeps the two
        # perf modes identical; perf's own is the fallback
        comm = (s.comm if s else None) or d.get("comm") or ":%s" % tid
        if self.opts["folded"]:
            key = ";".join([comm_name(comm)] +
                           [frame_name(n, dso or UNKNOWN) for _ip, n, _o, dso in reversed(frames)])
            self.folded[key] = self.folded.get(key, 0) + 1
            return
        self._print(d, comm, tid, time, frames)

    def _names(self, pid, ip):
        """The frames of a user address we add: the calls inlined there (ours: Resolver.frames,
        when pyelftools is here), then perf's name when perf showed the address, else ours."""
        named = self.ctx.resolver.user_frames(pid, ip)
        hit = self.names.get((pid, ip))
        return named if hit is None else named[:-1] + ((ip,) + hit,)

    def _print(self, d, comm, tid, time, frames):
        smp = d["sample"]
        attr = d.get("attr") or b""
        sample_type = int.from_bytes(attr[24:32], "little") if len(attr) >= 32 else 0
        head = "%s %7d " % (comm, tid)
        if sample_type & C.PERF_SAMPLE_CPU:
            head += "[%03d] " % smp.get("cpu", 0)
        head += "%5d.%06d: %10d %s: " % (time // 10**9, time % 10**9 // 1000, smp.get("period", 0),
                                         d.get("ev_name", ""))
        self.out.write("%s%s\n\n" % (head, frame_lines(
            [(ip, name or None, off, dso or UNKNOWN) for ip, name, off, dso in frames])))

    def finish(self):
        if self.opts["folded"]:
            folded.write(self.out, self.folded)
        if self.producer is None:
            self._commit()
            return
        while not self.exhausted:
            self._pull()
            self.ahead.clear()
        self.producer.join()
        error = self.producer.error
        if error is not None and not (isinstance(error, FormatError) and self.producer.report):
            raise error
        rep = self.file_report or self.producer.report
        rep.extra["perf_script"] = dict(self.served)
        if self.opts["json"]:
            json.dump(rep.to_json(), self.json_file, indent=1)
        text = render(rep, "%s: deferred callchain stitching%s" % (
            self.input, " (report written by deferstitch stitch)" if self.file_report else ""))
        if self.opts["report_to"]:
            self.report_file.write(text)
        else:
            sys.stderr.write(text)
        self._commit()
        if error is not None:       # damaged input: the report above is of what was read
            raise error

    def _commit(self):
        self.out.flush()
        for o in self.files.values():
            o.commit()
