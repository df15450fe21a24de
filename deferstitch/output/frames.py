"""Frames of a stitched sample as (ip, sym, dso), the way perf script shows them."""
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
    """[(ip, sym, dso)] for a sample, names as perf prints them when no symbol is known."""
    pid = s.pid
    out = []
    for ip in sample_ips(s)[:max_stack]:
        out.append((ip, UNKNOWN, ctx.maps.dso(pid, ip)))
    return out

