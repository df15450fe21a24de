"""Anyone's perf.data: deferstitch's samples against perf's own, on the files other projects
recorded (tests/data/real/external, one README line each).

For every file perf reads (perf 7.2 through tools/sid-perf, else perf 6.1), ``deferstitch script
--no-symbols FILE`` must give each sample the ips of ``perf script -F comm,tid,time,ip``: the
header line's ip when the sample has no callchain, every frame otherwise. Samples are keyed by
(tid, time, occurrence), so the members of an event group count one by one.

Usage:
    python3 tests/external.py            # per-file summary: matching/total samples
    python3 tests/external.py --keep     # (re)write perf's outputs of the small files into
                                         # tests/data/external/, so the test runs without perf
    python3 tests/external.py --stitch   # per file: SAMPLE counts perf reads, original -> stitched

perf's outputs are taken live where the tools are here, else (or with
DEFERSTITCH_EXTERNAL_PERF=kept) from tests/data/external/ (``<name>.perf72.txt`` or
``.perf61.txt``, the first line saying which perf and how it exited).
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import conftest
import datafiles

ROOT = Path(__file__).resolve().parent.parent
EXTERNAL = datafiles.unpack() / "external"
KEPT = Path(__file__).resolve().parent / "data" / "external"
KEEP_LIMIT = 64 << 10          # perf outputs kept in tests/data/external: the small ones only
FIELDS = "comm,tid,time,ip"


def files():
    """Paths relative to EXTERNAL of every perf.data there."""
    return [str(p.relative_to(EXTERNAL)) for p in datafiles.listing(EXTERNAL)]


def kept_name(rel):
    return rel.replace("/", "__")


# -- perf ---------------------------------------------------------------------------------------
def perf_tools():
    """[(label, argv prefix)] of the perfs that can run here: 7.2 (tools/sid-perf, as root), 6.1;
    none with DEFERSTITCH_EXTERNAL_PERF=kept (the kept outputs only)."""
    out = []
    if os.environ.get("DEFERSTITCH_EXTERNAL_PERF") == "kept":
        return out
    rig = ROOT / "tools" / "sid-perf"
    if os.geteuid() == 0 and conftest.sid_built():
        out.append(("perf72", [str(rig)]))
    if shutil.which("perf"):
        out.append(("perf61", [shutil.which("perf")]))
    return out


def run_perf(argv, rel, *args):
    """(exit status, stdout, stderr) of perf on EXTERNAL/rel; run from EXTERNAL, since the rig
    sees only its current directory."""
    p = subprocess.run([*argv, *args, "-i", "./" + rel], capture_output=True, text=True,
                       errors="replace", cwd=EXTERNAL, timeout=600)
    return p.returncode, p.stdout, p.stderr


def perf_answer(rel, tools=None):
    """(label, exit status, text) of ``perf script -F comm,tid,time,ip`` by the first perf that
    reads the file (exit 0), else the first that printed samples before failing; else the
    kept copy; None when no perf reads it."""
    tried = []
    for label, argv in (perf_tools() if tools is None else tools):
        rc, out, _err = run_perf(argv, rel, "script", "-F", FIELDS)
        if rc == 0:
            return label, rc, out
        tried.append((label, rc, out))
    for label, rc, out in tried:
        if parse_perf(out):
            return label, rc, out
    return kept_answer(rel) if not tried else None


def kept_answer(rel):
    for label in ("perf72", "perf61"):
        p = KEPT / ("%s.%s.txt" % (kept_name(rel), label))
        if p.exists():
            first, _, text = p.read_text().partition("\n")
            return label, int(first.split("exit=")[1]), text
    return None


def keep(rel, answer):
    label, rc, text = answer
    if len(text) > KEEP_LIMIT:
        return False
    KEPT.mkdir(parents=True, exist_ok=True)
    (KEPT / ("%s.%s.txt" % (kept_name(rel), label))).write_text(
        "# perf script -F %s -i %s (%s) exit=%d\n%s" % (FIELDS, rel, label, rc, text))
    return True


# -- the two texts ------------------------------------------------------------------------------
# perf: "%16s %7d %5lu.%06lu: " comm tid time (comm unpadded with a callchain, tid %5d in 6.1),
# then " %16lx" the sample's ip, or frames on the lines after ("\t%16lx", a name in pipe mode).
PERF_HEAD = re.compile(r"^(.*?)\s+(-?\d+)\s+(\d+\.\d+):(?:\s*|\s+([0-9a-f]+)(?:\s.*)?)$")
# ours, perf script's default layout: comm tid [cpu] time: period event: [ip sym (dso)]
OUR_HEAD = re.compile(r"^(.*?)\s+(-?\d+)\s+(?:\[\d+\]\s+)?(\d+\.\d+):\s+\d+\s+\S.*?:"
                      r"(?:\s*|\s+([0-9a-f]+)(?:\s.*)?)$")


def _samples(text, head):
    """{(tid, time, n): [ips]}, n counting samples with the same tid and time."""
    out = {}
    cur = None
    for line in text.split("\n"):
        if line.startswith("\t"):
            tok = line.split()
            if cur is not None and tok:
                cur.append(int(tok[0], 16))
            continue
        m = head.match(line)
        if not m:
            cur = None
            continue
        n = 0
        while (int(m.group(2)), m.group(3), n) in out:
            n += 1
        ip = m.group(4)
        cur = out[(int(m.group(2)), m.group(3), n)] = [int(ip, 16)] if ip else []
    return out


def parse_perf(text):
    return _samples(text, PERF_HEAD)


def parse_ours(text):
    return _samples(text, OUR_HEAD)


def ours(rel):
    """(exit status, stdout, stderr) of ``deferstitch script --no-symbols`` on EXTERNAL/rel."""
    p = subprocess.run([sys.executable, "-m", "deferstitch", "script", "--no-symbols", "-q",
                        str(EXTERNAL / rel)], capture_output=True, text=True, errors="replace",
                       cwd=ROOT, timeout=600)
    return p.returncode, p.stdout, p.stderr


def compare(theirs, mine):
    """(matching, total, first differing key or None): perf's samples found in ours with the
    same ips; samples only we print count against the total too."""
    keys = list(theirs) + [k for k in mine if k not in theirs]
    same = [k for k in keys if k in theirs and mine.get(k) == theirs[k]]
    bad = next((k for k in keys if theirs.get(k) != mine.get(k)), None)
    return len(same), len(keys), bad


def check(rel, tools=None):
    """One file's verdict: dict(file, perf, matching, total, ours_rc, first_diff) or None when
    no perf reads it."""
    answer = perf_answer(rel, tools)
    if answer is None:
        return None
    label, rc, text = answer
    theirs = parse_perf(text)
    orc, out, err = ours(rel)
    mine = parse_ours(out)
    same, total, bad = compare(theirs, mine)
    diff = None
    if bad is not None:
        diff = "%s: perf %s, ours %s" % (bad, _short(theirs.get(bad)), _short(mine.get(bad)))
    return dict(file=rel, perf=label, perf_rc=rc, matching=same, total=total, ours_rc=orc,
                ours_err=err.strip().splitlines() if orc else [], first_diff=diff,
                answer=answer)


def perf_event_names(argv, rel):
    """The event names ``perf script -F event`` prints for EVENT_DESC-less and named events
    alike (None when perf fails)."""
    rc, out, _err = run_perf(argv, rel, "script", "-F", "event")
    if rc != 0:
        return None
    return {line.strip()[:-1] for line in out.splitlines() if line.strip().endswith(":")}


def our_event_names(rel):
    import json
    p = subprocess.run([sys.executable, "-m", "deferstitch", "info", "--json", str(EXTERNAL / rel)],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    try:                  # (on damage info still prints what it read, then exits 2)
        return {a["name"] for a in json.loads(p.stdout)["attrs"]}
    except ValueError:
        return None


# -- stitch: perf reads what we write ----------------------------------------------------------
def dump_count(argv, path, cwd):
    """(exit status, PERF_RECORD_SAMPLE count) of ``perf script -D`` on path (relative to cwd)."""
    p = subprocess.run([*argv, "script", "-D", "-i", path], capture_output=True, cwd=cwd, timeout=600)
    return p.returncode, p.stdout.count(b"PERF_RECORD_SAMPLE(")


def check_stitch(rel, tmp, tools=None):
    """``deferstitch stitch`` of EXTERNAL/rel into tmp/st.data, read by each perf that reads
    the original: {"ours_rc", "ours_err", label: (original count, original exit, stitched count,
    stitched exit)}; a perf that refuses the original has (None, exit, ...) (perf 6.1 reads
    stitched files of perf 6.5+ it refuses)."""
    tmp = Path(tmp)
    shutil.copy(EXTERNAL / rel, tmp / "orig.data")
    out = tmp / "st.data"
    p = subprocess.run([sys.executable, "-m", "deferstitch", "stitch", "-q", str(tmp / "orig.data"),
                        "-o", str(out)], capture_output=True, text=True, errors="replace", cwd=ROOT,
                       timeout=600)
    res = {"ours_rc": p.returncode, "ours_err": p.stderr.strip()}
    for label, argv in (perf_tools() if tools is None else tools):
        orc, n = dump_count(argv, "./orig.data", tmp)
        if orc != 0 and n == 0:
            n = None                     # this perf does not read the original
        src, sn = dump_count(argv, "./st.data", tmp) if out.exists() else (None, None)
        res[label] = (n, orc, sn, src)
    return res


def _short(ips):
    if ips is None:
        return "absent"
    return "[%s]" % " ".join("%x" % i for i in ips[:6]) + (" ..." if len(ips) > 6 else "")


def main_stitch():
    import tempfile
    tools = perf_tools()
    for rel in files():
        with tempfile.TemporaryDirectory() as tmp:
            r = check_stitch(rel, tmp, tools)
        perfs = ["%s %s->%s%s" % (k, "-" if v[0] is None else v[0], v[2],
                                  "" if v[3] == 0 else " (exit %s)" % v[3])
                 for k, v in r.items() if k.startswith("perf")]
        print("%-70s ours exit %d  %s%s" % (rel, r["ours_rc"], "  ".join(perfs) or "no perf reads it",
                                            "  " + r["ours_err"][-150:] if r["ours_rc"] else ""))
    return 0


def main(argv):
    if "--stitch" in argv:
        return main_stitch()
    do_keep = "--keep" in argv
    tools = perf_tools()
    if not files():
        print("no files at %s" % EXTERNAL)
        return 1
    for rel in files():
        v = check(rel, tools)
        if v is None:
            print("%-70s no perf reads it" % rel)
            continue
        kept = do_keep and keep(rel, v["answer"])
        print("%-70s %6d/%-6d %s%s%s%s" % (
            rel, v["matching"], v["total"], v["perf"],
            "" if v["perf_rc"] == 0 else " (exit %d)" % v["perf_rc"],
            " ours exit %d %s" % (v["ours_rc"], v["ours_err"]) if v["ours_rc"] else "",
            " kept" if kept else ""))
        if v["first_diff"]:
            print("    first difference %s" % v["first_diff"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
