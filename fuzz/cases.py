"""One fuzz case: input bytes -> our pipeline, and the invariants every input must keep.

    trace_case(data)    a trace.dat through the bridge and the ftrace reader, its pages read
                        by the C walker and by walk.py: the same reports and errors; and through
                        the C feed (feed_case)
    feed_case(data)     a trace.dat through the C feed (_tracefeed.c) and the Python feed, both
                        over our page reader: the same samples, reports and errors
    pages_case(data)    raw ring-buffer pages through the page reader alone
    perf_case(data)     a perf.data through the C engine and the Python path: equal reports
    dwarf_case(data)    an ELF file's DWARF through the C reader (_dwarf.c): every address of
                        its code answered, or a ValueError; never a crash

An input ends either in a report whose counts add up (samples == stitched + passed +
sum(unmatched)) or in a DeferstitchError: one line naming the file. Anything else raises
(AssertionError, or the stray exception itself) and the harness saves the input; a crash in C
(ours) is caught by libFuzzer, which saves it too. Shared by fuzz_trace.py,
module_fuzz.c and tests/test_fuzz_harness.py.
"""
import atexit
import os
import shutil
import tempfile

from deferstitch.errors import DeferstitchError, FormatError

_TMP = tempfile.mkdtemp(prefix="deferstitch-case-")
atexit.register(shutil.rmtree, _TMP, True)


def _write(data, name):
    path = os.path.join(_TMP, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def _one_line(err, path):
    msg = str(err)
    assert "\n" not in msg and msg.startswith(path), "not one line naming the file: %r" % msg


def trace_case(data):
    """A trace.dat: the bridge and the reader end in a conserved report or a one-line error,
    the same whether the C walker (tracecmd/pages.py) or walk.py reads the pages."""
    path = _write(data, "case.dat")
    ours = _trace_run(path, True)
    theirs = _trace_run(path, False)
    # fork() refused (ENOMEM) would be a leak of this process's address space (a buffer a
    # damaged size asked for, kept): said here, at the input that did it, not by the next test
    # that forks.
    for r in (ours, theirs):
        assert not (r[2] and "cannot fork" in r[2]), "%s (VmSize %s)" % (r[2], _vm_size())
    assert ours[1:] == theirs[1:], "the C walker and walk.py differ:\n%s\n%s" % (
        ours[1:], theirs[1:])
    _feeds_agree(path)
    return ours[0]


def _vm_size():
    """This process's address space, from /proc/self/status (Linux), as text."""
    try:
        with open("/proc/self/status") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("VmSize:")),
                        "?")
    except OSError:
        return "?"


def feed_case(data):
    """A trace.dat through the C feed and the Python feed over our page reader: the same."""
    return _feeds_agree(_write(data, "case.dat"))


def _feeds_agree(path):
    """The C feed says what the Python feed says (samples, report, error), where it reads the
    file at all; returns the number of samples."""
    py, c = _feed_run(path, False), _feed_run(path, True)
    if py is None or c is None:
        return 0                    # the engine does not read this file (or it does not open)
    assert py == c, "the C feed and the Python feed differ:\n%s\n%s" % (py, c)
    return len(py[2])


def _feed_run(path, engine_feed):
    """(error, report JSON, samples) of one feed, or None where there is nothing to compare."""
    from deferstitch.tracecmd import engine
    from deferstitch.tracecmd.bridge import Trace
    from deferstitch.tracecmd.reader import FtraceFeed
    try:
        trace = Trace(path)
    except DeferstitchError as err:
        _one_line(err, path)
        return None
    with trace:
        if not engine.usable(trace):
            return None
        out = []
        if engine_feed:
            feed = engine.EngineFeed(trace, out.append, None, 50, 1000)
        else:
            feed = FtraceFeed(sample=out.append, max_pending=50, exit_grace=1000,
                              **trace.feed_args())
        error = None
        try:
            feed.run(trace)
        except DeferstitchError as err:
            _one_line(err, path)
            error = str(err)
            feed.finish()
        rep = feed.report
        assert rep.conserved(), rep.to_json()
        samples = [(s.tid, s.pid, s.cpu, s.time, s.kernel, s.cookie, s.comm, s.outcome,
                    s.reason, s.user, s.after_stack, s.ref.system, s.ref.name) for s in out]
        return error, rep.to_json(), samples


def _trace_run(path, walker):
    """(report, its JSON, the error line or None), pages read by the C walker (walker) or
    walk.py's."""
    from deferstitch.tracecmd.bridge import Trace
    from deferstitch.tracecmd.reader import FtraceFeed
    saved = os.environ.get("DEFERSTITCH_ACCEL")
    os.environ["DEFERSTITCH_ACCEL"] = "1" if walker else "0"
    try:
        try:
            trace = Trace(path)
        except DeferstitchError as err:
            _one_line(err, path)
            return None, None, str(err)
        error = None
        with trace:
            feed = FtraceFeed(**trace.feed_args())      # peeks at the CPUs as the CLI does
            try:
                for ev in trace:
                    feed.event(ev)
                    ev.fields()                 # every field of every event decodes
            except DeferstitchError as err:
                _one_line(err, path)
                error = str(err)
            rep = feed.finish()
        assert rep.conserved(), rep.to_json()
        return rep, rep.to_json(), error
    finally:
        if saved is None:
            del os.environ["DEFERSTITCH_ACCEL"]
        else:
            os.environ["DEFERSTITCH_ACCEL"] = saved


def pages_case(data):
    """Raw ring-buffer pages straight into the page reader (deferstitch/_tracedat.c), no
    libtracecmd: the first byte chooses the layout (bit 0: 4-byte longs, bit 1: big endian,
    bits 2-3: 1 to 4 CPUs), the rest is the CPUs' data, split in whole pages. Every record
    comes out inside what was read, or Damaged: never a crash (ASan watches the C)."""
    from deferstitch import _tracedat
    if not data:
        return None
    mode, body = data[0], data[1:]
    page = 4096
    path = _write(body, "case.pages")
    ncpu = 1 + (mode >> 2 & 3)
    share = (len(body) // page + ncpu - 1) // ncpu * page
    cpus = [(i, i * share, max(0, len(body) - i * share if i == ncpu - 1 else
                               min(share, len(body) - i * share))) for i in range(ncpu)]
    fd = os.open(path, os.O_RDONLY)
    try:
        args = (fd, len(body), page, 4 if mode & 1 else 8, bool(mode & 2), (0, 2, 4, 4, 8), cpus)
        w = _tracedat.Walker(*args)
        n = 0
        try:
            while True:
                r = w.next()
                if r is None:
                    break
                _ts, cpu, _missed, _type, _pid, offset, payload = r
                assert 0 <= offset < len(body) and len(payload) >= 8, r[:6]
                w.peek(cpu)
                n += 1
        except _tracedat.Damaged as err:
            cpu, offset, why = err.args
            assert 0 <= offset <= len(body) + page and why, err.args
        scan = _tracedat.Walker(*args).scan()
        assert len(scan) == ncpu and sum(s[1] for s in scan) >= n
        return n
    finally:
        os.close(fd)


def perf_case(data, max_pending=1000):
    """A perf.data: the engine's report equals the Python path's, and where the input is damaged
    both stop with the same one-line error after the same counts (the engine decodes what it
    does not walk with the Python decoders, in one pass)."""
    from deferstitch.perfdata import engine
    from deferstitch.perfdata.feed import PerfFeed
    from deferstitch.pipeline import Null
    from deferstitch.perfdata.reader import PerfData
    path = _write(data, "case.data")
    try:
        perf = PerfData.open(path)
    except DeferstitchError as err:
        _one_line(err, path)
        return None
    with perf:
        feed = PerfFeed(perf, Null(), max_pending=max_pending)
        try:
            py = feed.run()
            py_err = None
        except DeferstitchError as err:
            _one_line(err, path)
            py, py_err = feed.report, err
        assert py.conserved(), py.to_json()
    if not engine.available():
        return py
    with PerfData.open(path) as perf:
        if engine.unavailable(perf) is not None:
            return py
        run = engine.EngineRun(perf, engine.MODE_NONE, max_pending)
        c_err = None
        try:
            for _chunk in run.chunks():
                pass
        except FormatError as err:
            c_err = err
        except DeferstitchError:            # a limit of the engine's, not damage: Python answers
            return py
        c = run.report()
        if c_err is not None:
            c.error = str(c_err)
    assert str(c_err) == str(py_err), "the engine and Python stop differently: %s / %s" % (c_err, py_err)
    assert c.to_json() == py.to_json(), "engine and Python reports differ:\n%s\n%s" % (
        c.to_json(), py.to_json())
    return py


def dwarf_case(data):
    """An ELF file (seeds: the captures' workloads, DWARF 5) through the DWARF reader's C twin:
    for every 3rd address of the first 64 KiB above its lowest section address, the functions
    holding it, their names and the unit's language, or a ValueError (a damaged section, said
    with its offset); any other exception or a crash (ASan watches the C) is a finding."""
    from deferstitch import _dwarf
    from deferstitch.symbols.debug_sections import DebugSections
    path = _write(data, "case.elf")
    try:
        sections = DebugSections(path)
    except (ValueError, OSError):               # not ELF, headers past the end
        return None
    if ".debug_info" not in sections.sections or not sections.little_endian:
        return None
    reader = _dwarf.Reader(sections.sections, sections.addr_size, sections.little_endian,
                           tuple(sections.mapped))
    base = min((s.addr for s in sections.elf.sections if s.addr), default=0)
    found = 0
    for addr in range(base, base + 0x10000, 3):
        try:
            hit = reader.path(addr)
            if hit is None:
                continue
            unit, funcs = hit
            reader.language(unit)
            for die, ranges in funcs:
                assert any(lo <= addr < hi for lo, hi in ranges), (hex(addr), ranges)
                reader.names(die)
            found += 1
        except ValueError as err:
            assert str(err) and "\n" not in str(err), err
    count, used = reader.held()
    assert used <= _dwarf.INDEX_BUDGET or count == 1
    return found
