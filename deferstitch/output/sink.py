"""Sink: what an output takes from the run, and the calls it gets, on both paths.

Every output is a Sink, and every call a run may make has its default in Sink below, doing
nothing (as perf's util/tool.c gives every callback of a tool its stub): an output writes only
the calls it cares about, and a new call is one stub there. The Python path (perfdata/feed.py
PerfFeed, the definition) calls

    arrived(s)         a sample as it comes, in time order, before its outcome is known
    passing(rec)       a record other than a sample as it comes, in time order
    resolved(s)        a sample whose outcome is known, the moment it is (names taken then see
                       the maps as they were when the stack was taken)
    record(rec)        a record other than a sample, in time order (maps, comms, lost, ...)
    sample(s)          a sample whose outcome is final, in time order
    close()            the input has ended (or stopped at damage): finish the output

record() and sample() come through a hold-back queue (each record waits for the samples before
it); an output that takes neither says ``in_order = False`` and the feed keeps nothing back.

The trace side (tracecmd/cli.py) calls named(s) for each sample, its outcome final, in time
order (the sample's frames named by the side's namer), then close().

The C engine (perfdata/engine.py) hands the same samples in fewer, cheaper calls. What an output
takes from it is declared by its class attribute ``takes``, one of the kinds below; pipeline.py
picks the engine's mode from it, and an output that declares None runs on the Python path.

    takes       engine mode     calls on the engine path, in this order
    ---------   -------------   ---------------------------------------------------------------
    REPORT      MODE_NONE       close() (the report alone: ``report`` set before it)
    FILE        MODE_FILE       the stitched file's records through ``writer`` (PerfWriter:
                                keep_table, engine_sink, engine_wrote, write, write_kept), close()
    SAMPLES     MODE_EVENTS     resolved_ips(*Resolved) per sample as it is resolved, close()
    ORDERED     MODE_ORDERED    resolved_ips(*Ordered) as resolved, turn(number) when that
                                sample's turn comes in time order, close()
    COUNTED     MODE_COUNTED    resolved_counted(*Counted) per distinct stack and outcome, close()
    CHAINS      MODE_CHAINS     resolved_counted(*Counted), ``ips`` with the chain's context
                                markers kept (PERF_CONTEXT_USER before a stitched sample's user
                                frames), close()
    OUTCOMES    MODE_OUTCOMES   outcome(*Outcome) per sample and record(rec) for LOST and
                                LOST_SAMPLES, in time order, close()

On SAMPLES, ORDERED, COUNTED and CHAINS the side-band records (maps, comms) go to the run's
PerfContext (ctx.observe), not to the output, in the order the Python path has them.

The engine's records: the C engine builds plain tuples (deferstitch/_accel.c, its header
comment); the named tuples below are their fields, in their order, named once for both sides.
pipeline.py spreads each into the output's method (``resolved_ips(*t)``), whose parameters are
those fields by those names (an unused one may start with "_"; tests/test_sink.py checks every
output): no object is made per sample, which named records cost perf script on the engine (5 %).
``ips`` is native u64 bytes, ``period`` None when the attr's fixed period applies (COUNTED:
their sum), ``entry`` the attr's index in perf.evlist.entries, ``key`` the outcome's number
(model.OUTCOME_KEYS).
"""
from collections import namedtuple

from ..abi.consts import PERF_CONTEXT_USER
from ..model import OUTCOME_KEYS, STITCHED
from .frames import sample_ips, sample_period

REPORT, FILE, SAMPLES, ORDERED, COUNTED, CHAINS, OUTCOMES = (
    "report", "file", "samples", "ordered", "counted", "chains", "outcomes")

Resolved = namedtuple("Resolved", "pid tid comm ips period entry")
Ordered = namedtuple("Ordered", "pid tid comm ips period entry cpu time number ip")
Ordered.__doc__ = """Resolved and the sample's cpu, time, number (named again by turn()) and
own ip (PERF_SAMPLE_IP) when its attr has no callchain, else None."""
Counted = namedtuple("Counted", "pid tid comm ips period entry count key first last after")
Counted.__doc__ = """``count`` samples of one (pid, tid, comm, ips, entry, outcome): ``first``
and ``last`` their first and last times, ``after`` how many were stitched after their stack."""
Outcome = namedtuple("Outcome", "time cpu tid comm key")

ON_CPU, OFF_CPU = "[on-cpu]", "[off-cpu]"     # Sink.view: the wall-clock view's two frames

_KEY = {k: i for i, k in enumerate(OUTCOME_KEYS)}        # an outcome or reason -> its number

# what each kind hands, and the method that takes it
RECORD_OF = {SAMPLES: (Resolved, "resolved_ips"), ORDERED: (Ordered, "resolved_ips"),
             COUNTED: (Counted, "resolved_counted"), CHAINS: (Counted, "resolved_counted"),
             OUTCOMES: (Outcome, "outcome")}


class Sink:
    """An output: every call of the run, each doing nothing until overridden; ``takes`` says
    which of the engine's calls it gets (the module docstring)."""

    takes = None            # what the C engine hands this output (above); None: the Python path
    in_order = True         # takes record() and sample(): the feed holds records back for them
    view = None             # the wall-clock view: the frame the next stacks go under, below the
                            # comm ([on-cpu] or [off-cpu]: output/offcpu.py sets it), else None
    bins = None             # (t0, width): COUNTED and CHAINS stacks kept apart per time slice
                            # of width ns from t0 (the flame graph page's timeline), else None

    # -- the Python path (PerfFeed) and the trace side -------------------------------------------
    def arrived(self, s):
        """A sample as it comes, in time order, its outcome not yet known."""

    def passing(self, rec):
        """A record other than a sample as it comes, in time order (not held back)."""

    def resolved(self, s):
        """A sample whose outcome is known, the moment it is (names taken now see its maps)."""

    def record(self, rec):
        """A record other than a sample, in time order (maps, comms, lost, ...)."""

    def sample(self, s):
        """A sample whose outcome is final, in time order."""

    def named(self, s, weight=1):
        """The trace side: a sample whose frames its namer names, its outcome final, in time
        order; ``weight`` what it counts (a wait's ns with --off-cpu, else 1)."""

    # -- the C engine: each record's fields as the parameters (RECORD_OF) ------------------------
    def resolved_ips(self, *_resolved):
        """SAMPLES: a Resolved; ORDERED: an Ordered, as each sample is resolved."""

    def turn(self, number):
        """ORDERED: sample ``number`` (an Ordered's) is next in time order."""

    def resolved_counted(self, *_counted):
        """COUNTED and CHAINS: a Counted, per distinct stack and outcome."""

    def outcome(self, *_outcome):
        """OUTCOMES: an Outcome per sample, in time order."""

    # -- both --------------------------------------------------------------------------------------
    def close(self):
        """The input has ended (or stopped at damage): finish the output."""


def counted(s, chain=False):
    """A sample of the Python path as the engine's Counted of one: ``ips`` its real addresses
    (frames.sample_ips), or with ``chain`` its chain as MODE_CHAINS hands it (the kernel part
    with its context markers, then a stitched sample's PERF_CONTEXT_USER and user frames)."""
    if chain:
        ips = tuple(s.kernel)
        if s.outcome == STITCHED:
            ips += (PERF_CONTEXT_USER,) + tuple(s.user)
    else:
        ips = tuple(sample_ips(s))
    return (s.pid, s.tid, s.comm, ips, sample_period(s), None, 1,       # (a tuple: one a sample)
            _KEY[s.reason or s.outcome], s.time, s.time, 1 if s.after_stack else 0)


class CountedSink(Sink):
    """An output that sums samples per stack (COUNTED, CHAINS): resolved_counted() is its one
    way in, on the engine and, each sample a Counted of one (counted()), on the Python path.
    Each declares its ``takes``, COUNTED or CHAINS (this base, no output, none)."""

    def resolved(self, s):
        self.resolved_counted(*counted(s, self.takes == CHAINS))
