"""Parse perf script's text (any perf version): `-F tid,time,ip` into (tid, usec, ips) samples,
`-D` dumps, the default layout and `-F` fields; compare_frames holds ours to perf's, frame
for frame."""
import re
from collections import Counter

HEAD = re.compile(r"^\s*(-?\d+)\s+(\d+)\.(\d+):")


def parse_tid_time_ip(text):
    out = []
    cur = None
    for line in text.split("\n"):
        if line.startswith("\t") or (line.startswith(" ") and cur is not None and not HEAD.match(line)):
            tok = line.split()
            if tok and cur is not None:
                cur[2].append(int(tok[0], 16))
            continue
        m = HEAD.match(line)
        if m:
            cur = (int(m.group(1)), int(m.group(2)) * 10**6 + int(m.group(3)), [])
            out.append(cur)
    return out

DUMP_SAMPLE = re.compile(r"^(?:-?\d+ )?(\d+) 0x[0-9a-f]+ \[0x[0-9a-f]+\]: PERF_RECORD_SAMPLE\(.*?\): (-?\d+)/(-?\d+):")
DUMP_IP = re.compile(r"^\.{5}\s+\d+: ([0-9a-f]+)")
CONTEXT_MAX = (1 << 64) - 4095


def parse_dump_samples(text):
    """(tid, usec, ips without context markers) of each PERF_RECORD_SAMPLE in `perf script -D`."""
    out = []
    cur = None
    for line in text.split("\n"):
        m = DUMP_SAMPLE.match(line)
        if m:
            cur = (int(m.group(3)), int(m.group(1)) // 1000, [])
            out.append(cur)
            continue
        if cur is not None:
            m = DUMP_IP.match(line)
            if m:
                ip = int(m.group(1), 16)
                if ip < CONTEXT_MAX:
                    cur[2].append(ip)
            elif line.startswith(" ..."):
                cur = None
    return out

SCRIPT_HEAD = re.compile(r"^(.*?)\s+(-?\d+)\s+(?:\[\d+\]\s+)?(\d+\.\d+):")
SCRIPT_FRAME = re.compile(r"^\t\s*([0-9a-f]+) (.*) \((.*)\)$")


def parse_script(text, inlined=False):
    """{(tid, time text, n): (header line, [(ip, sym, dso)])} of perf script's default layout,
    n counting samples with the same tid and time; the "(inlined)" lines (unless ``inlined``)
    and the "(cookie)" frame left out."""
    out = {}
    head = None
    for line in text.split("\n"):
        if not line:
            head = None
            continue
        m = SCRIPT_FRAME.match(line)
        if m and head is not None:
            if (inlined or m.group(3) != "inlined") and m.group(2) != "(cookie)":
                out[head][1].append((int(m.group(1), 16), m.group(2), m.group(3)))
            continue
        m = SCRIPT_HEAD.match(line)
        if m:
            n = 0
            while (int(m.group(2)), m.group(3), n) in out:
                n += 1
            head = (int(m.group(2)), m.group(3), n)
            out[head] = (line, [])
    return out


def strip_unmerged_cookie(frames):
    """perf leaves some samples unmerged: their cookie is a last "[unknown] ([unknown])" frame
    after kernel frames only."""
    if frames and frames[-1][-1] == "[unknown]" and all(f[-1] == "[kernel.kallsyms]" for f in frames[:-1]):
        return frames[:-1]
    return frames


def assert_script_equals_perf(ours_text, theirs_text):
    """Our `script --no-symbols` against perf's default `perf script` of the same input: the
    same samples, the same ips and dsos frame for frame (perf's own unmerged cookie aside: more
    frames on our side only there), comm alike in 99 % (it may differ around exec)."""
    ours, theirs = parse_script(ours_text), parse_script(theirs_text)
    assert set(ours) == set(theirs)
    same_head = sum(ours[k][0] == theirs[k][0] for k in ours)
    assert same_head >= 0.99 * len(ours)          # comm may differ around exec (see captures/README)
    mismatched = 0
    for k, (_h, frames) in theirs.items():
        mine = ours[k][1]
        kept = strip_unmerged_cookie(frames)        # compare what perf printed, cookie aside
        n = len(kept)
        assert [f[0] for f in mine[:n]] == [f[0] for f in kept], k
        assert len(mine) == n or len(kept) < len(frames), k    # more only where perf left it unmerged
        frames = kept
        mismatched += sum(a[2] != b[2] for a, b in zip(mine, frames) if b[2] != "[unknown]")
    assert mismatched <= 0.001 * sum(len(f) for _h, f in theirs.values())   # [vdso] lines


def compare_frames(theirs, mine, kind, excused=(), first_max=8, comm=False):
    """perf's frames against ours, sample by sample, from parse_script of each: (Counter of
    differences by kind, the first few (key, perf's, ours), frames compared, of them inlined).
    perf's own quirks are counted under their names: "perf-left-unmerged" (its cookie frame
    after kernel frames only: that part compared) and "perf-discarded-chain" (no frame where
    we have some: a stray context value). kind(p, o) names the bucket of a differing frame;
    those in ``excused`` are not shown in the first few. ``comm``: header lines compared too.
    A sample one side lacks counts in "samples"."""
    bad, first, frames, inlined = Counter(), [], 0, 0

    def differ(what, key, a, b, show=True):
        bad[what] += 1
        if show and len(first) < first_max:
            first.append((key, a, b))
    if theirs.keys() != mine.keys():
        bad["samples"] = len(theirs.keys() ^ mine.keys())
    for key, (head, pf) in theirs.items():
        if key not in mine:
            continue
        mhead, of = mine[key]
        if comm and head != mhead:
            differ("comm", key, head, mhead)
        kernel_only = strip_unmerged_cookie(pf)
        if len(kernel_only) < len(pf) and len(of) > len(kernel_only):
            bad["perf-left-unmerged"] += 1      # stitched after its stack: ours has the user part
            pf, of = kernel_only, of[:len(kernel_only)]
        if not pf and of:
            bad["perf-discarded-chain"] += 1
            continue
        if len(pf) != len(of):
            differ("length", key, pf, of)
            continue
        for p, o in zip(pf, of):
            frames += 1
            inlined += p[2] == "inlined"
            if p != o:
                what = kind(p, o)
                differ(what, key, p, o, what not in excused)
    return bad, first, frames, inlined


FIELDS_HEAD = re.compile(r"^(.*?)\s+(-?\d+)\s+(?:\[\d+\]\s+)?(\d+\.\d+):\s*(?:(\d+)\s+)?(?:(\S+):)?")


def parse_fields(text):
    """{(tid, time text, n): (period or None, event or None, [ips])} of `perf script -F
    comm,tid,time,ip[,period,event]` text, or of the default layout (an ip line's first token
    is the ip); n counts samples with the same tid and time (group members share both)."""
    out = {}
    cur = None
    for line in text.split("\n"):
        if line.startswith("\t"):
            if cur is not None:
                out[cur][2].append(int(line.split()[0], 16))
            continue
        m = FIELDS_HEAD.match(line) if line else None
        if m is None:
            cur = None
            continue
        n = 0
        while (int(m.group(2)), m.group(3), n) in out:
            n += 1
        cur = (int(m.group(2)), m.group(3), n)
        out[cur] = (int(m.group(4)) if m.group(4) else None, m.group(5), [])
    return out
