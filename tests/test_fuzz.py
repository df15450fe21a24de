"""Fuzzing the reader, the feed and the CLI with mutated real captures (hypothesis).

    python3 -m pytest -q tests/test_fuzz.py                                # CI: ~300 cases, seeded
    DEFERSTITCH_FUZZ_EXAMPLES=10000 python3 -m pytest -q tests/test_fuzz.py   # the long run (~15 min)

DEFERSTITCH_FUZZ_EXAMPLES is the total number of cases, shared evenly by the seeds; a long run
is random (new cases each time, failures kept in hypothesis' example database), the CI run is
derandomized so it is the same every time.

Seeds are small cuts of the real captures (rewritten by our writer, so attrs and features stay
valid; the compressed one keeps its first zstd containers, the pipe one is a byte prefix) and a
big-endian synthetic file. Mutations: bit flips, truncation, a record's size / type, a callchain's
or deferred record's nr, an attr's size, the header's attr_size and section offsets.

Every case must end, within CASE_SECONDS, in either
  - a valid result whose counts add up (samples == stitched + passed + sum(unmatched)), or
  - a FormatError with a byte offset (CLI: exit 2 and one line on stderr)
and never a traceback. The library runs in-process under a SIGALRM watchdog (a hang is a
failure, not a stuck CI job); the CLI runs in-process too (cli.main), one command per case.
"""
import atexit
import contextlib
import io
import json
import os
import shutil
import signal
import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import capture
from cuts import cut_perf
from synth import K, Synth
from deferstitch import cli
from deferstitch.abi import consts as C
from deferstitch.errors import FormatError
from deferstitch.perfdata.feed import PerfFeed
from deferstitch.perfdata.reader import PerfData

TOTAL = int(os.environ.get("DEFERSTITCH_FUZZ_EXAMPLES", "0") or 0)
LONG = TOTAL > 0
CASE_SECONDS = 20
SEEDS = ["a_per_task", "two_events_cpu_task", "lost_per_task", "pipe", "compressed", "synth_be"]
PER_SEED = -(-TOTAL // len(SEEDS)) if LONG else 100
WORK = Path(tempfile.mkdtemp(prefix="deferstitch-fuzz-"))
atexit.register(shutil.rmtree, WORK, True)


_seed_cache = {}


def seed(name):
    """(bytes, [(record offset, type)]) of one seed, built once per session."""
    if name in _seed_cache:
        return _seed_cache[name]
    path = WORK / ("seed-%s.data" % name)
    if name == "synth_be":
        s = Synth(">")
        for t in range(40):
            s.sample(7 + t % 3, 1000 + 10 * t, cookie=0xA0 + t // 6, cpu=t % 2)
            if t % 6 == 5:
                s.deferred(7 + t % 3, 1005 + 10 * t, 0xA0 + t // 6, [0x401000, 0x401100])
            if t % 13 == 0:
                s.round()
        s.sample(9, 2000, kernel=K)
        s.lost(2100)
        s.exit(8, 2200)
        s.save(path)
    elif name == "pipe":
        src, _ = capture("pipe")
        with PerfData.open(str(src)) as p:
            ends = [r.offset + len(r.data) + len(r.extra) for r in p.records() if not r.inner]
        path.write_bytes(src.read_bytes()[:ends[min(400, len(ends) - 1)]])
    elif name == "compressed":
        src, _ = capture("compressed")
        cut_perf(src, path, stop=lambda r, n: r.type == C.PERF_RECORD_COMPRESSED2 and n > 3,
             compressed=True)
    elif name == "lost_per_task":
        src, _ = capture("lost_per_task")
        seen = {"lost": 0}

        def stop(r, n):
            seen["lost"] += r.type == C.PERF_RECORD_LOST
            return seen["lost"] >= 2 and n > 150
        cut_perf(src, path, stop=stop)
    else:
        src, _ = capture(name)
        cut_perf(src, path, 300)
    raw = path.read_bytes()
    with PerfData.open(str(path)) as p:
        recs = [(r.offset, r.type, p.evlist) for r in p.records() if not r.inner]
        layouts = {r_off: _nr_offsets(p, r_off, r_type, raw) for r_off, r_type, _ in recs}
        attr_at = _attr_offsets(p)
    _seed_cache[name] = (raw, [(o, t) for o, t, _ in recs], layouts, attr_at)
    return _seed_cache[name]


def test_a_cut_is_the_first_records_in_a_valid_file(tmp_path):
    """The seeds' cut (tests/cuts.py, fuzz/seeds.py too): the first records byte for byte, under
    the original's attrs; a compressed cut keeps the containers themselves."""
    def records(path, inner=True):
        with PerfData.open(str(path)) as p:
            return [(r.type, r.data) for r in p.records() if inner or not r.inner], \
                [e.attr.raw for e in p.evlist.entries]
    src, _ = capture("two_events_cpu_task")
    cut_perf(src, tmp_path / "cut.data", 50)
    (orig, attrs), (cut, cut_attrs) = records(src), records(tmp_path / "cut.data")
    assert cut == orig[:50] and cut_attrs == attrs
    src, _ = capture("compressed")
    cut_perf(src, tmp_path / "z.data", stop=lambda r, n: r.type == C.PERF_RECORD_COMPRESSED2 and n > 3,
             compressed=True)
    orig, cut = records(src, inner=False)[0], records(tmp_path / "z.data", inner=False)[0]
    assert cut == orig[:len(cut)] and len(cut) > 3 and cut[-1][0] == C.PERF_RECORD_COMPRESSED2


def _nr_offsets(perf, off, rtype, raw):
    """Where a record's ``nr`` sits (callchain of a SAMPLE, CALLCHAIN_DEFERRED), if any."""
    if rtype == C.PERF_RECORD_CALLCHAIN_DEFERRED:
        return off + 16
    if rtype == C.PERF_RECORD_SAMPLE:
        size = struct.unpack_from(perf.endian + "H", raw, off + 6)[0]
        ent = perf.evlist.for_sample(raw[off:off + size])
        if ent is not None and ent.layout.callchain_offset is not None and ent.layout.has_callchain:
            return off + ent.layout.callchain_offset
    return None


def _attr_offsets(perf):
    """File offsets of each attr's ``size`` field (file mode) — in the attrs section."""
    h = perf.header
    if h is None:
        return []
    return [h.attrs.offset + i * h.attr_size + 4 for i in range(h.attrs.size // h.attr_size)]


# -- mutations ------------------------------------------------------------------------------
U16 = st.sampled_from([0, 1, 7, 8, 9, 16, 24, 0x7FFF, 0xFFFF]) | st.integers(0, 0xFFFF)
U32 = st.sampled_from([0, 1, 63, 64, 128, 144, 4096, 1 << 31, 0xFFFFFFFF]) | st.integers(0, 0xFFFFFFFF)
U64 = (st.sampled_from([0, 1, 2, 127, 1 << 16, 1 << 32, (1 << 63), (1 << 64) - 1, (1 << 64) - 640])
       | st.integers(0, (1 << 64) - 1))

mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 1 << 30), st.integers(0, 7)),
    st.tuples(st.just("truncate"), st.integers(0, 1 << 30)),
    st.tuples(st.just("size"), st.integers(0, 1 << 30), U16),
    st.tuples(st.just("type"), st.integers(0, 1 << 30), st.integers(0, 100) | U32),
    st.tuples(st.just("nr"), st.integers(0, 1 << 30), U64),
    st.tuples(st.just("attr_size"), st.integers(0, 1 << 30), U32),
    st.tuples(st.just("header"), st.sampled_from([16, 24, 32, 40, 48]), U64),
    st.tuples(st.just("bytes"), st.integers(0, 1 << 30), st.binary(min_size=1, max_size=16)),
)


def mutate(name, muts):
    raw, recs, nr_at, attr_at = seed(name)
    buf = bytearray(raw)
    e = "<" if raw[:8] == b"PERFILE2" else ">"
    for m in muts:
        kind = m[0]
        if not buf:
            break
        if kind == "flip":
            pos = m[1] % len(buf)
            buf[pos] ^= 1 << m[2]
        elif kind == "truncate":
            del buf[m[1] % (len(buf) + 1):]
        elif kind == "bytes":
            pos = m[1] % len(buf)
            buf[pos:pos + len(m[2])] = m[2][:max(0, len(buf) - pos)]
        elif kind in ("size", "type", "nr"):
            cands = [o for o, t in recs if kind != "nr" or nr_at.get(o) is not None]
            if not cands:
                continue
            off = cands[m[1] % len(cands)]
            at, code = {"size": (off + 6, "H"), "type": (off, "I"), "nr": (nr_at.get(off), "Q")}[kind]
            if at + struct.calcsize(code) <= len(buf):
                struct.pack_into(e + code, buf, at, m[2])
        elif kind == "attr_size":
            if attr_at:
                at = attr_at[m[1] % len(attr_at)]
            else:       # pipe: the attr.size inside a HEADER_ATTR record
                cands = [o for o, t in recs if t == C.PERF_RECORD_HEADER_ATTR]
                if not cands:
                    continue
                at = cands[m[1] % len(cands)] + 12
            if at + 4 <= len(buf):
                struct.pack_into(e + "I", buf, at, m[2])
        elif kind == "header":
            if raw[:8] in (b"PERFILE2", b"2ELIFREP") and m[1] + 8 <= len(buf):
                struct.pack_into(e + "Q", buf, m[1], m[2])
    return bytes(buf)


# -- running one case ------------------------------------------------------------------------
class Hang(Exception):
    pass


@contextlib.contextmanager
def watchdog(seconds):
    def fire(_sig, _frame):
        raise Hang("case took more than %d s" % seconds)
    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class _Null:
    def record(self, rec):
        pass

    def sample(self, s):
        pass


def check_library(path, size):
    """Reader + feed + stitcher: a conserved report, or a FormatError with an offset."""
    try:
        perf = PerfData.open(str(path))
    except FormatError as err:
        assert isinstance(err.offset, int) and err.offset >= 0, err
        return None
    with perf:
        feed = PerfFeed(perf, _Null(), max_pending=1000)
        try:
            rep = feed.run()
        except FormatError as err:
            assert isinstance(err.offset, int) and err.offset >= 0, err
            rep = feed.report
        assert rep.conserved(), rep.to_json()
        return rep


def run_cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


_case_no = [0]


def check_cli(cmd, path, rep):
    # a fresh name each case: cmd_stitch leaves its output open when the writer refuses an attr
    # (UnsupportedError), and that file object's buffer is flushed whenever it is collected
    _case_no[0] += 1
    outp = WORK / ("out-%d.data" % _case_no[0])
    extra = {"report": ["--json"], "info": ["--json"], "stitch": ["-o", outp],
             "folded": ["-o", os.devnull], "script": ["-o", os.devnull, "--no-symbols"]}[cmd]
    try:
        _check_cli(cmd, path, rep, outp, extra)
    finally:
        if outp.exists():
            outp.unlink()


def _check_cli(cmd, path, rep, outp, extra):
    stitching = [] if cmd == "info" else ["-q", "--max-pending", "1000"]     # info stitches nothing
    rc, out, err = run_cli([cmd, path] + stitching + extra)
    assert "Traceback" not in err, err
    if rc == 2:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("deferstitch: "), err
        # a FormatError names the offset; the one deliberate refusal (an attr tail perf 6.1
        # cannot hold, only when stitch shrinks the attrs) names the attr instead
        assert "offset 0x" in lines[0] or "perf 6.1 cannot hold it" in lines[0], err
        return
    assert rc == 0, (rc, err)
    assert rep is not None       # the library succeeded where the CLI did
    if cmd == "report":
        j = json.loads(out)
        assert j["samples"] == j["stitched"] + j["passed"] + sum(j["unmatched"].values())
        assert j["conserved"] and j["samples"] == rep.samples
        # the CLI took the C engine where it could: it must say what the Python path says
        assert j == json.loads(json.dumps(rep.to_json())), "engine and Python reports differ"
    elif cmd == "stitch":
        with PerfData.open(str(outp)) as p:         # what we write, we read back
            n = sum(1 for r in p.records() if r.type == C.PERF_RECORD_SAMPLE)
        assert n == rep.samples


def one_case(name, muts, cmd):
    data = mutate(name, muts)
    path = WORK / ("case-%s.data" % name)
    path.write_bytes(data)
    with watchdog(CASE_SECONDS):
        rep = check_library(path, len(data))
        check_cli(cmd, path, rep)


fuzz_settings = settings(max_examples=PER_SEED, deadline=None, derandomize=not LONG,
                         database=None if not LONG else settings.default.database,
                         suppress_health_check=list(HealthCheck), print_blob=True)


@pytest.mark.parametrize("name", SEEDS)
def test_unmutated_seed_is_valid(name):
    raw = seed(name)[0]
    path = WORK / ("plain-%s.data" % name)
    path.write_bytes(raw)
    rep = check_library(path, len(raw))
    assert rep is not None and rep.samples > 0


@pytest.mark.parametrize("name", SEEDS)
def test_fuzz(name):
    seed(name)          # build (or skip without captures) outside the timed cases

    @fuzz_settings
    @given(muts=st.lists(mutation, min_size=1, max_size=4),
           cmd=st.sampled_from(["report", "stitch", "folded", "script", "info"]))
    def case(muts, cmd):
        one_case(name, muts, cmd)
    case()
