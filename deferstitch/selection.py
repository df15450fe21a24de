"""perf's sample selection: ``--comm``, ``--pid``, ``--tid``, ``--cpu``, ``--time``, with perf's
syntax and meaning, for any front end (no file format here).

Stitching runs on the whole input; the selection only says which samples come out and are
counted (Sample.chosen), so a chosen sample keeps its stack even when the deferred record that
carries it lies outside the range. What perf does, and where:

    --comm a,b     the thread's comm when the sample was taken (util/event.c machine__resolve:
                   symbol_conf.comm_list, thread__comm_str; a thread never named is ":TID",
                   tid 0 is "swapper")
    --pid/--tid    the sample's pid / tid (same place: pid_list, tid_list)
    --cpu 0-3,5    the sample's cpu (builtin-script.c: perf_session__cpu_bitmap); every event
                   of the file must record it
    --time         util/time-utils.c: "start,stop" (either end open) and several such ranges
                   separated by spaces, or percent slices of the recording ("10%/2",
                   "0%-10%,30%-40%", "50%") measured from the file's first to its last sample
                   time (HEADER_SAMPLE_TIME); a sample without a time is always kept

A bad list or range is a SelectionError carrying perf's own words for it.
"""
import math
import re

from .errors import DeferstitchError

NSEC_PER_SEC = 1_000_000_000


class SelectionError(DeferstitchError):
    """A list or range perf would refuse: perf's words for it."""


def comm_of(comm, tid):
    """The name perf gives a sample's thread: its comm, "swapper" for tid 0, else ":TID"."""
    if comm:
        return comm
    return "swapper" if tid == 0 else ":%s" % (-1 if tid is None else tid)


# -- lists ---------------------------------------------------------------------------------------
def parse_comms(text):
    """perf's strlist: names separated by commas (empty entries dropped)."""
    return frozenset(c for c in text.split(",") if c)


def parse_ints(text, name):
    """perf's intlist (util/intlist.c): decimal numbers separated by commas or spaces."""
    out = set()
    for tok in re.split(r"[,\s]+", text.strip()):
        if not tok:
            continue
        try:
            out.add(int(tok, 10))
        except ValueError:
            raise SelectionError("problems parsing %s list: %r" % (name, text)) from None
    if not out:
        raise SelectionError("problems parsing %s list: %r" % (name, text))
    return frozenset(out)


def parse_cpus(text):
    """perf's cpu list (lib/perf/cpumap.c perf_cpu_map__new): "0-3,5", ranges and numbers."""
    out = set()
    for tok in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", tok)
        if m is None:
            raise SelectionError("Invalid cpu_list: %r" % text)
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo or hi >= 4096:            # MAX_NR_CPUS
            raise SelectionError("Invalid cpu_list: %r" % text)
        out.update(range(lo, hi + 1))
    return frozenset(out)


# -- time (util/time-utils.c) --------------------------------------------------------------------
def parse_nsec_time(text):
    """parse_nsec_time: "SEC[.FRACTION]" (up to 9 digits of fraction) in ns, or None."""
    m = re.fullmatch(r"(\d*)(?:\.(\d{0,9}))?", text)
    if m is None or (not m.group(1) and m.group(2) is None):
        return None
    sec = int(m.group(1) or "0")
    frac = (m.group(2) or "").ljust(9, "0")
    return sec * NSEC_PER_SEC + int(frac or "0")


def _one_range(text):
    """perf_time__parse_str: "start,stop", either end empty (0: open)."""
    start_s, _, end_s = text.partition(",")
    start = parse_nsec_time(start_s) if start_s else 0
    end = parse_nsec_time(end_s) if end_s else 0
    if start is None or end is None or (end and end < start):
        return None
    return (start, end)


def _absolute(text):
    """perf_time__parse_strs: ranges "a,b c,d", separated by white space; at least one comma,
    the ranges in order and not overlapping."""
    if "," not in text:
        return None
    ranges = []
    for piece in text.split():
        if piece.count(",") != 1:
            return None
        r = _one_range(piece)
        if r is None:
            return None
        ranges.append(r)
    if text.count(",") != len(ranges):
        return None
    for a, b in zip(ranges, ranges[1:]):
        if a[1] >= b[0]:
            return None
    return ranges


def _percent(text):
    """parse_percent: "N%" as a fraction, or None."""
    if not text.endswith("%") or text.count("%") != 1:
        return None
    try:
        d = float(text[:-1])
    except ValueError:
        return None
    return d / 100.0


def _c_round(x):
    """C's round(): halves away from zero."""
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def _percent_range(start_p, end_p, first, last):
    """set_percent_time: a slice of [first, last]; the end made exclusive unless it is last."""
    if start_p is None or end_p is None or not (0.0 <= start_p <= 1.0 and 0.0 <= end_p <= 1.0):
        return None
    total = last - first
    start = first + int(_c_round(start_p * total))
    end = first + int(_c_round(end_p * total))
    if end > start and end != last:
        end -= 1
    return (start, end)


def _slash(piece, first, last):
    """percent_slash_split: "10%/2", the second 10% slice."""
    pct, _, nth = piece.partition("/")
    p = _percent(pct)
    try:
        i = int(nth, 10)
    except ValueError:
        return None
    if p is None or p <= 0.0:
        return None
    return _percent_range(p * (i - 1), p * i, first, last)


def _dash(piece, first, last):
    """percent_dash_split: "0%-10%"."""
    a, _, b = piece.partition("-")
    return _percent_range(_percent(a), _percent(b), first, last)


def percent_ranges(text, first, last):
    """perf_time__percent_parse_str: comma-separated slices, all "/" or all "-" or one "N%"."""
    if "/" in text:
        split = _slash
    elif "-" in text:
        split = _dash
    else:                       # one_percent_convert: "N%" is "N%/1"
        if not text.endswith("%"):
            return None
        r = _slash(text + "/1", first, last)
        return None if r is None else [r]
    out = []
    for piece in text.split(","):
        r = split(piece, first, last)
        if r is None:
            return None
        out.append(r)
    return out


def parse_time(text, first=None, last=None):
    """perf_time__parse_for_ranges: [(start, end)], 0 for an open end. ``first``/``last``: the
    recording's first and last sample time (HEADER_SAMPLE_TIME), needed for percent slices."""
    if "%" in text:
        if not first and not last:
            raise SelectionError("--time %s: no first/last sample time found in the file "
                                 "(HEADER_SAMPLE_TIME), which percent slices are measured "
                                 "from" % text)
        ranges = percent_ranges(text, first, last)
    else:
        ranges = _absolute(text)
    if not ranges:
        raise SelectionError("Invalid time string: %r" % text)
    return ranges


def time_skips(ranges, t):
    """perf_time__ranges_skip_sample: whether a sample at time ``t`` is left out."""
    if not ranges or not t:
        return False
    if len(ranges) == 1:
        start, end = ranges[0]
        return bool((start and t < start) or (end and t > end))
    for start, end in ranges:
        if t >= start and (t <= end or not end):
            return False
    return True


class Selection:
    """Which samples come out: each field None (anything) or what perf's option named."""

    def __init__(self, comms=None, pids=None, tids=None, cpus=None, ranges=None, text=""):
        self.comms, self.pids, self.tids, self.cpus = comms, pids, tids, cpus
        self.ranges = ranges
        self.text = text            # the options as given, for the report

    def admits(self, pid, tid, comm, cpu, time):
        """Whether a sample of task pid/tid named ``comm`` (None: never named), on ``cpu`` at
        ``time`` (None: unknown) is chosen."""
        if self.pids is not None and pid not in self.pids:
            return False
        if self.tids is not None and tid not in self.tids:
            return False
        if self.comms is not None and comm_of(comm, tid) not in self.comms:
            return False
        if self.cpus is not None and cpu not in self.cpus:
            return False
        return not time_skips(self.ranges, time)


def perf_options(argv, option):
    """The selection options perf was given (its own command line, for the perf script plugin:
    perf applies them to what it hands the script, the plugin to its report): an object with
    selection's names. ``option(argv, short, long)``: one option's value or None."""
    class Given:
        pass
    given = Given()
    given.comm = option(argv, "-c", "--comms") or option(argv, None, "--comm")
    given.pid, given.tid = option(argv, None, "--pid"), option(argv, None, "--tid")
    given.cpu, given.time = option(argv, "-C", "--cpu"), option(argv, None, "--time")
    return given


def options_text(args):
    """The selection options as given on the command line, in perf's spelling."""
    return " ".join("--%s %s" % (name, getattr(args, name)) for name in NAMES
                    if getattr(args, name, None) is not None)


NAMES = ("comm", "pid", "tid", "cpu", "time")


def from_args(args, first_last):
    """The Selection the options of ``args`` ask for, or None when they ask for none.
    ``first_last()`` gives the recording's (first, last) sample times, asked only for percent
    slices."""
    given = {n: getattr(args, n, None) for n in NAMES}
    if all(v is None for v in given.values()):
        return None
    ranges = None
    if given["time"] is not None:
        first, last = first_last() if "%" in given["time"] else (None, None)
        ranges = parse_time(given["time"], first, last)
    return Selection(
        comms=parse_comms(given["comm"]) if given["comm"] is not None else None,
        pids=parse_ints(given["pid"], "pid") if given["pid"] is not None else None,
        tids=parse_ints(given["tid"], "tid") if given["tid"] is not None else None,
        cpus=parse_cpus(given["cpu"]) if given["cpu"] is not None else None,
        ranges=ranges, text=options_text(args))


def check(args):
    """Refuse a list or range perf would refuse before any input is read (percent slices
    checked against a stand-in recording: their times are each input's)."""
    from_args(args, lambda: (1, 2))


# the options, as argparse takes them: (flags, keywords)
OPTIONS = [
    (("-c", "--comms", "--comm"), dict(dest="comm", metavar="COMM[,COMM...]",
                                       help="only samples of threads of these names (as perf "
                                            "script -c/--comms)")),
    (("--pid",), dict(metavar="PID[,PID...]", help="only samples of these processes")),
    (("--tid",), dict(metavar="TID[,TID...]", help="only samples of these threads")),
    (("-C", "--cpu"), dict(metavar="CPUS", help="only samples taken on these CPUs: 0-3,5 (as perf)")),
    (("--time",), dict(metavar="RANGES",
                       help="only samples in these times, as perf --time: START,STOP (either end "
                            "open, seconds), several separated by spaces, or slices of the "
                            "recording: 10%%/2, 0%%-10%%,30%%-40%%")),
]


def add_options(parser):
    """perf's selection options on a command that reads samples."""
    for flags, kw in OPTIONS:
        parser.add_argument(*flags, **kw)
