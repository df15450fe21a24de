"""Frames of a stitched sample as (ip, sym, symoff, dso), the way perf script shows them."""
from ..abi.consts import PERF_CONTEXT_MAX
from ..model import STITCHED

UNKNOWN = "[unknown]"


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


def sym_text(sym, off, with_offset=True):
    if sym is None:
        return UNKNOWN
    return "%s+%#x" % (sym, off) if with_offset else sym


def sample_period(s):
    """The period perf reports: the sampled PERIOD, else the attr's fixed sample_period
    (evsel__parse_sample starts from attr.sample_period)."""
    p = s.ref.parsed.period
    return p if p is not None else s.ref.entry.attr.sample_period
