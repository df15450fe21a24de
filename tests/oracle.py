"""perf 7.2's own text outputs of the real captures, and the cookie-rule oracle built from them.

``script-fields-nomerge.txt`` (perf script -F comm,tid,time,ip,sym,dso --no-merge-callchains)
shows each deferred sample with its kernel frames and a ``<cookie> (cookie)`` frame, and each
PERF_RECORD_CALLCHAIN_DEFERRED as a ``DEFERRED CALLCHAIN [cookie: N]`` block. The oracle: a
deferred sample's expected ips are its kernel frames followed by the frames of the block with
the same tid and cookie, wherever that block stands; its kernel frames alone when there is none.
"""
import lzma
import re

HEAD = re.compile(r"^(.*?)\s+(-?\d+)\s+(\d+)\.(\d+):\s*(.*)$")
DEFERRED = re.compile(r"DEFERRED CALLCHAIN \[cookie: ([0-9a-f]+)\]")
CAP = 16 << 20          # the guest capped every text output at 16 MiB (head -c 16M)
MAX_STACK = 127


class OracleRecord:
    __slots__ = ("comm", "tid", "usec", "cookie", "ips", "block")

    def __init__(self, comm, tid, usec, block_cookie):
        self.comm, self.tid, self.usec = comm, tid, usec
        self.block = block_cookie      # cookie of a DEFERRED CALLCHAIN block, else None
        self.cookie = None             # cookie frame of a sample
        self.ips = []


def parse_script_fields(path):
    """[OracleRecord] in file order, and whether the text was cut by the 16 MiB cap."""
    raw = lzma.open(path).read()
    capped = len(raw) >= CAP
    text = raw.decode("utf-8", "replace")
    out = []
    cur = None
    for line in text.split("\n"):
        if not line:
            cur = None
            continue
        if line.startswith("\t"):
            if cur is None:
                continue
            parts = line.split(None, 2)
            rest = parts[2] if len(parts) > 2 else ""
            if rest.endswith("(inlined)"):
                continue                  # perf's addr2line inline frames: not chain entries
            ip = int(parts[0], 16)
            if parts[1:2] == ["(cookie)"]:
                cur.cookie = ip
            else:
                cur.ips.append(ip)
            continue
        m = HEAD.match(line)
        if not m:
            continue
        d = DEFERRED.search(m.group(5))
        cur = OracleRecord(m.group(1), int(m.group(2)), int(m.group(3)) * 10**6 + int(m.group(4)),
                           int(d.group(1), 16) if d else None)
        out.append(cur)
    if capped and out:
        out.pop()                         # the last record may be cut mid-way
    return out, capped


def cookie_rule(records, capped=False):
    """[(tid, usec, expected ips, has_block)] for every sample, in file order.

    For a capped file, a sample whose block may lie past the cut is given ``None`` (unknown)."""
    blocks = {}
    for r in records:
        if r.block is not None:
            blocks.setdefault((r.tid, r.block), r.ips)
    out = []
    for r in records:
        if r.block is not None:
            continue
        if r.cookie is None:
            out.append((r.tid, r.usec, r.ips[:MAX_STACK], None))
            continue
        user = blocks.get((r.tid, r.cookie))
        if user is None and capped:
            out.append((r.tid, r.usec, None, False))
            continue
        ips = r.ips + (user or [])
        out.append((r.tid, r.usec, ips[:MAX_STACK], user is not None))
    return out


def parse_report_stats(path):
    """{record name: count} from `perf report --stats` (Aggregated stats only)."""
    counts = {}
    for line in open(path):
        m = re.match(r"\s+([A-Z0-9_]+) events:\s+(\d+)", line)
        if m and m.group(1) != "TOTAL":
            counts.setdefault(m.group(1), int(m.group(2)))
        if line.strip().endswith("stats:") and counts:
            break
    return counts


def assert_chains_follow_cookie_rule(got, folder):
    """``got``: [(tid, usec, ips)] as another tool decoded our file; each tid's samples, in
    order, must carry the cookie rule's chains (first 127 frames)."""
    records, capped = parse_script_fields(folder / "script-fields-nomerge.txt.xz")
    by_tid = {}
    for tid, usec, ips in got:
        by_tid.setdefault(tid, []).append((usec, ips[:MAX_STACK]))
    seen = {}
    expected = cookie_rule(records, capped)
    for tid, usec, ips, _has in expected:
        i = seen.get(tid, 0)
        seen[tid] = i + 1
        g_usec, g_ips = by_tid[tid][i]
        assert g_usec == usec, (tid, i)
        if ips is not None:
            assert g_ips == ips, (tid, i, usec)
    assert len(expected) > 0 and (len(got) >= len(expected) if capped else len(got) == len(expected))
