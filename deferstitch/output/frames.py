"""Frames of a stitched sample as (ip, sym, symoff, dso), the way perf script shows them, and
the names every output gives them: the one place a frame's text is decided, for perf.data and
trace.dat alike.

    perf side    ips --StackCache(ctx, make): named by ctx.resolver-->  make(pid, frames)
    trace side   a Sample --KeyedStacks(namer, make): named by its namer-->  make(pid, frames)

``frames`` are (ip, sym or None, symoff, dso) innermost first; the trace side's ``ip`` is the
kernel address, the user file offset, or the raw user address.
"""
import os

from ..abi.consts import PERF_CONTEXT_MAX, PERF_CONTEXT_USER
from ..model import STITCHED
from ..symbols.maps import KERNEL_START, UNKNOWN
from ..symbols.resolver import INLINED


def sample_ips(s):
    """Real addresses of a sample, innermost first: kernel part, then its user frames."""
    ips = [ip for ip in s.kernel if ip < PERF_CONTEXT_MAX]
    if s.outcome == STITCHED:
        ips.extend(s.user)
    return ips


def name_frames(s, ctx, max_stack=None):
    """[(ip, sym or None, symoff, dso)], innermost first, named now (see PerfFeed._resolved)."""
    return name_ips(s.pid, sample_ips(s)[:max_stack], ctx)


def name_ips(pid, ips, ctx):
    """name_frames() for a pid and its ips."""
    frame = ctx.resolver.frame
    return [(ip,) + frame(pid, ip) for ip in ips]


class StackCache:
    """``make(pid, frames)`` per (pid, ips), each ip's frames with those inlined there
    (Resolver.frames), kept while that process's maps and the kernel's
    symbols stand still: profiles repeat a few hundred stacks many thousand times. Processes
    whose maps are the same share their stacks (Maps.signature: the names of their addresses
    are the same), so a program run by many processes is named once. ``ips`` is a tuple (the
    Python path) or native u64 bytes (the C engine)."""

    LIMIT = 1 << 18

    def __init__(self, ctx, make):
        self.ctx, self.make = ctx, make
        self.texts = {}           # (signature, ips) -> make()'s result
        self.frames = {}          # (signature, ip) -> named frame: stacks share most of their frames
        self.epoch = None
        self.sigs = {}            # pid -> signature, while the stamp below stands
        self.stamp = None         # (maps.generation, maps.sig_epoch, resolver epoch)

    def get(self, pid, ips):
        res = self.ctx.resolver
        maps = res.maps
        stamp = self.stamp
        if stamp is None or stamp[0] != maps.generation or stamp[1] != maps.sig_epoch \
                or stamp[2] != res.epoch:
            self.sigs.clear()
        sig = self.sigs.get(pid)
        if sig is None:
            # kernel addresses: the kernel's maps (pid -1, by content too) and symbols; user
            # ones: the process's signature, taken last (a signature may start a new sig_epoch)
            kernel = maps.signature(-1)
            sig = maps.signature(pid)
            epoch = (kernel, res.epoch, maps.sig_epoch)
            if epoch != self.epoch:
                self.texts.clear()
                self.frames.clear()
                self.sigs.clear()
                self.epoch = epoch
            self.sigs[pid] = sig
            self.stamp = (maps.generation, maps.sig_epoch, res.epoch)
        texts = self.texts
        hit = texts.get((sig, ips))
        if hit is None:
            if len(texts) > self.LIMIT or len(self.frames) > self.LIMIT:
                texts.clear()
                self.frames.clear()
            seq = ips if ips.__class__ is tuple else memoryview(ips).cast("Q").tolist()
            frames, frame, named = self.frames, res.frames, []
            user = False            # past the kernel half: from the first user address on
            for ip in seq:
                if ip < KERNEL_START or ip == PERF_CONTEXT_USER:
                    user = True
                elif user and ip < PERF_CONTEXT_MAX:
                    named += res.user_frames(pid, ip)       # garbage in the user half
                    continue
                f = frames.get((sig, ip))
                if f is None:       # (a context marker, in a flame graph's chain, has no name)
                    f = frame(pid, ip) if ip < PERF_CONTEXT_MAX else ((ip, None, 0, None),)
                    frames[(sig, ip)] = f
                named += f          # the frames inlined at ip, then its own
            hit = texts[(sig, ips)] = self.make(pid, named)
        return hit


class KeyedStacks:
    """StackCache's counterpart for samples whose namer names their frames the same for all
    samples of one key (the trace side's Namer: a user file's names are fixed from the first
    time it is named): ``make(pid, frames)`` per ``namer.stack_key(s)``, the frames from
    ``namer.frames(s)``, or with ``chains`` from ``namer.chain(s)`` (with their context markers,
    without the lost-stack frame: FlameGraph's)."""

    LIMIT = 65536

    def __init__(self, namer, make, chains=False):
        self.key, self.frames = namer.stack_key, namer.chain if chains else namer.frames
        self.make = make
        self.texts = {}           # stack key -> make()'s result

    def get(self, s):
        key = self.key(s)
        hit = self.texts.get(key)
        if hit is None:
            if len(self.texts) > self.LIMIT:    # memory stays flat on stacks that never repeat
                self.texts.clear()
            hit = self.texts[key] = self.make(s.pid, self.frames(s))
        return hit


def sym_text(sym, off):
    """``sym+0xoff`` as perf script prints a frame; ``off`` None: the name alone."""
    if sym is None:
        return UNKNOWN
    return "%s+%#x" % (sym, off) if off is not None else sym


def lost_frame_name(reason):
    """The frame an unmatched sample ends in, where its user part would be (pprof, flame
    graphs, the trace side's frames): never a sample without frames, the loss where it happened."""
    return "[user stack lost: %s]" % reason


def frame_lines(frames, sym=True, symoff=True, dso=True):
    """perf script's frame lines, each after a newline: ``\t%16lx sym+0xoff (dso)``; ``sym``,
    ``symoff``, ``dso`` False: without that part, as -F leaves it out (util/evsel_fprintf.c
    sample__fprintf_callchain: an inlined frame says "(inlined)" in place of its dso, always)."""
    if sym and symoff and dso:
        return "".join("\n\t%16x %s (%s)" % (ip, sym_text(s, off), d) for ip, s, off, d in frames)
    return "".join("\n\t%16x%s%s" % (ip, " " + sym_text(s, off if symoff else None) if sym else "",
                                      " (inlined)" if d == INLINED else " (%s)" % d if dso else "")
                   for ip, s, off, d in frames)


def frame_name(sym, dso, addr=None):
    """A frame's folded name (stackcollapse-perf.pl's): its symbol, else ``[dso]``
    (``[libc.so.6]``), else UNKNOWN. ``addr`` given: a frame of no known file is named by its
    address instead (the trace side: a raw user address of the synchronous user_stack, an
    address no VMA covered), so stacks that differ there stay apart."""
    if sym is not None:
        return sym
    if dso == UNKNOWN:
        return "%#x" % addr if addr else UNKNOWN
    return _dso_names.get(dso) or _dso_names.setdefault(dso, "[%s]" % os.path.basename(dso.strip("[]")))


_dso_names = {}      # dso -> "[basename]": few dsos, many frames


def comm_name(comm):
    """A comm as the first name of a folded line or a flame graph: spaces as ``_``."""
    return comm.replace(" ", "_")


BY_PERIOD = ("period", "ns")    # weights by period; "ns": periods that are nanoseconds (off-CPU)


def weight(kind, period, attr):
    """A sample's weight: 1, or by period (BY_PERIOD) its PERIOD (None: the attr's fixed
    sample_period, as evsel__parse_sample starts from it)."""
    if kind not in BY_PERIOD:
        return 1
    return period if period is not None else attr.sample_period


def counted_weight(kind, count, period, ctx, entry):
    """weight() of ``count`` samples counted as one (a sink.Counted): ``period`` their sum, None
    when their attr (``ctx.perf.evlist.entries[entry]``) has a fixed period."""
    if kind not in BY_PERIOD:
        return count
    return period if period is not None else count * ctx.perf.evlist.entries[entry].attr.sample_period


def sample_period(s):
    """The period perf reports for a perf sample (weight() by period)."""
    return weight("period", s.ref.period, s.ref.entry.attr)
