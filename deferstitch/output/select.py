"""One event's samples, where a file holds several: ``--event NAME`` in front of any output.

perf report shows each event apart; a folded file or a flame graph adds whatever it is given,
so a file of cpu-clock and sched_switch samples would mix CPU time and task switches in one
weight. EventSelect hands on the samples of the events chosen and every other call as it is.
"""
import re
import sys

from ..errors import DeferstitchError
from .sink import Sink

# what perf adds to an event's name: its terms and modifiers (cpu-clock/freq=999/, cycles:u)
_MODS = re.compile(r"/[^/]*/[ukhpPGHSDIWeb]*$|:[ukhpPGHSDIWeb]+$")
DUMMY = (1, 9)          # PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY: perf's side-band event


def sampling(perf):
    """The file's events that take samples (not perf's dummy side-band event)."""
    return [e for e in perf.evlist.entries if (e.attr.type, e.attr.config) != DUMMY]


def entries_named(perf, name):
    """The indexes of the events named ``name`` (perf's name, or without its terms and
    modifiers); an error naming the file's events when none is."""
    found = {e.index for e in perf.evlist.entries if name in (e.name, _MODS.sub("", e.name))}
    if not found:
        raise DeferstitchError("%s: no event named %s; its events: %s" % (
            perf.path, name, ", ".join(e.name for e in sampling(perf))))
    return found


def warn_mixed(perf, quiet):
    """Say on stderr when the file holds samples of several events that an output would add up."""
    names = [e.name for e in sampling(perf)]
    if len(names) > 1 and not quiet:
        sys.stderr.write("deferstitch: %s: holds %d events (%s): each stack adds them up; "
                         "choose one with --event NAME\n" % (perf.path, len(names), ", ".join(names)))


class EventSelect(Sink):
    """``inner`` given only the samples of the events whose indexes are ``entries``."""

    def __init__(self, inner, entries):
        self.inner, self.entries = inner, entries
        self.takes, self.bins = inner.takes, inner.bins
        self.report = None

    def resolved(self, s):
        if s.ref.entry.index in self.entries:
            self.inner.resolved(s)

    def sample(self, s):
        if s.ref.entry.index in self.entries:
            self.inner.sample(s)

    def record(self, rec):
        self.inner.record(rec)

    def resolved_counted(self, pid, tid, comm, ips, period, entry, count, key, first, last, after):
        if entry in self.entries:
            self.inner.resolved_counted(pid, tid, comm, ips, period, entry, count, key, first, last, after)

    def resolved_ips(self, pid, tid, comm, ips, period, entry, *ordered):
        if entry in self.entries:
            self.inner.resolved_ips(pid, tid, comm, ips, period, entry, *ordered)

    def close(self):
        self.inner.report = self.report
        self.inner.close()
