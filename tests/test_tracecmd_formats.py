"""Our own reading of the trace.dat metadata (tracecmd/headers.py collect(), tracecmd/formats.py)
gives what libtracecmd 3.1.6 and libtraceevent 1.7.1 give through _ffi.Handle: the event formats
(every field's type, offset, size, arraylen, elementsize, flags), the count of formats not
parsed, the long size, the kernel function of an address (kallsyms) and the comm of a pid
(saved cmdlines), on every trace.dat the tests carry or make; and, on damaged format, kallsyms,
cmdlines and header_page texts, the verdict of the library itself (called in a child process,
where a crash of the library is its verdict: ours must then be formats.Crashes).
"""
import ast
import copy
import ctypes
import faulthandler
import os
import random
import signal
import subprocess

import pytest

from conftest import CAPTURES, DATA
import tracecmd_synth as S
from tracecmd_text import need_libtracecmd, need_trace_cmd

REAL = CAPTURES / "ftrace" / "trace-userstacktrace.dat"
CRASH = "crash"


def need_bookworm_libtraceevent():
    """formats.py follows libtraceevent 1.7.1 step by step; another version may differ."""
    version = need_libtracecmd()
    if version[:2] != (1, 7):
        pytest.skip("formats.py follows libtraceevent 1.7.1, this is %s: apt-get install "
                    "libtraceevent1=1:1.7.1-1 (Debian bookworm)" % ".".join(map(str, version)))


def _meta(path):
    from deferstitch.tracecmd import headers
    fd = os.open(path, os.O_RDONLY)
    try:
        return headers.collect(str(path), fd)
    finally:
        os.close(fd)


def _convert(src, dst, version, compression):
    subprocess.run(["trace-cmd", "convert", "-i", str(src), "-o", str(dst), "--file-version",
                    str(version), "--compression", compression], check=True, capture_output=True)
    return dst


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Every trace.dat of the tests: tests/data's, tracecmd_synth's kinds, the real capture,
    and v6/v7 conversions by trace-cmd 3.1.6 where it is installed."""
    tmp = tmp_path_factory.mktemp("formats")
    files = sorted(DATA.glob("*.dat"))
    for make in (S.deferred, S.userstack, S.instances, S.missed_per_cpu):
        files.append(tmp / (make.__name__ + ".dat"))
        make(files[-1])
    files.append(S.deferred(tmp / "variant.dat", variant=True))
    if REAL.exists():
        files.append(REAL)
    try:
        need_trace_cmd()
    except pytest.skip.Exception:
        return files
    for src in [f for f in files if f.parent == tmp][:2] + ([REAL] if REAL.exists() else []):
        for version, compression in ((6, "none"), (7, "none"), (7, "zstd")):
            files.append(_convert(src, tmp / ("%s-v%d-%s.dat" % (src.stem, version, compression)),
                                  version, compression))
    return files


def _sample_addresses(ks, h, n=4000):
    """Addresses around the symbols of the file (at, just before, just after, between two)
    plus a few past the ends; chosen from libtraceevent's own answers where it can give them."""
    rnd = random.Random(7)
    picks = rnd.sample(range(len(ks)), min(n, len(ks)))
    addrs = {0, 1, (1 << 64) - 1}
    for i in picks:
        a = ks.addrs[i]
        nxt = ks.addrs[i + 1] if i + 1 < len(ks) else a + 0x1000
        addrs.update({a, a - 1, a + 1, (a + nxt) // 2, nxt - 1})
    if len(ks):
        addrs.update({ks.addrs[-1], ks.addrs[-1] + 1, ks.addrs[-1] + 0x100000, ks.addrs[0] - 1})
    return sorted(a % (1 << 64) for a in addrs)


def test_the_metadata_equals_libtracecmds_on_every_trace_dat(traces):
    need_bookworm_libtraceevent()
    from deferstitch.errors import DeferstitchError
    import libtracecmd as _ffi
    from deferstitch.tracecmd import formats
    compared = versions = 0
    seen = set()
    for path in traces:
        try:
            h = _ffi.Handle(str(path))
        except DeferstitchError:                # damaged: refused before libtracecmd or by it
            continue
        try:
            meta = _meta(path)
            ev = formats.Events(meta)
            ours, theirs = [e.key() for e in ev.events], [e.key() for e in h.events()]
            assert ours == theirs, (path, [(a, b) for a, b in zip(ours, theirs) if a != b][:1])
            assert ev.not_parsed == h.formats_not_parsed, path
            assert ev.common_layout() == h.common_layout, path
            assert formats.parse_header_page(meta.header_page, meta.long_size) == h.long_size
            assert (meta.page_size, meta.big_endian) == (h.page_size, h.big_endian), path
            assert (None if meta.compression in (None, "none") else meta.compression) \
                == h.compression, path
            ks = formats.Kallsyms(meta.kallsyms)
            addrs = _sample_addresses(ks, h)
            got = [ks.function(a) for a in addrs]
            want = [h.function(a) for a in addrs]
            assert got == want, (path, [(hex(a), x, y) for a, x, y in zip(addrs, got, want)
                                        if x != y][:5])
            cl = formats.Cmdlines(meta.cmdlines)
            pids = sorted(set(range(-2, 130)) | set(cl.pids) | {p + 1 for p in cl.pids}
                          | {(1 << 31) - 1, -(1 << 31), 1 << 32})
            assert [cl.comm(p) for p in pids] == [h.comm(p) for p in pids], path
            compared += 1
            versions |= 1 << meta.version
            seen.add(meta.compression)
        finally:
            h.close()
    assert compared >= 8, compared
    assert versions & (1 << 6), versions
    if REAL.exists():                           # a v7 file, zstd-compressed
        assert versions & (1 << 7) and "zstd" in seen, (versions, seen)
    if REAL.exists():
        assert len(formats.Kallsyms(_meta(REAL).kallsyms)) > 100000     # the real kernel's


# -- the library itself, in a child process: its verdict on damaged texts -----------------------
def _in_children(items, run):
    """[run(item) for item in items], each run in a child process that runs on to the next
    item; where the child dies (the library crashed on that item), CRASH, and a new child
    takes the items after it."""
    out = []
    while len(out) < len(items):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:                                    # child: no Python cleanup
            try:
                os.close(r)
                faulthandler.disable()
                for sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGFPE):
                    signal.signal(sig, signal.SIG_DFL)
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 2)
                for item in items[len(out):]:
                    os.write(w, (repr(run(item)) + "\n").encode())
                os._exit(0)
            except BaseException:
                os._exit(3)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            lines = f.read().decode().splitlines()
        _pid, status = os.waitpid(pid, 0)
        out += [ast.literal_eval(line) for line in lines]
        if len(out) < len(items):
            assert os.WIFSIGNALED(status), (status, items[len(out)])
            out.append(CRASH)
    return out


_TEP = {}


def tep():
    """libtraceevent's parse functions the bridge does not need, typed here."""
    if not _TEP:
        lib = ctypes.CDLL("libtraceevent.so.1")
        P, S_, I, UL = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_ulong
        for name, res, args in (("tep_alloc", P, []), ("tep_free", None, [P]),
                                ("tep_set_long_size", None, [P, I]),
                                ("tep_parse_event", I, [P, S_, UL, S_]),
                                ("tep_parse_kallsyms", I, [P, S_]),
                                ("tep_parse_saved_cmdlines", I, [P, S_]),
                                ("tep_parse_header_page", I, [P, S_, UL, I]),
                                ("tep_get_header_page_size", I, [P]),
                                ("tep_get_function_count", I, [P])):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
            _TEP[name] = fn
    return _TEP


def _their_event(item):
    """tep_parse_event's verdict: (failed, [the event's key] or [])."""
    import libtracecmd as _ffi
    text, system, long_size = item
    t, api = tep(), _ffi.api
    h = t["tep_alloc"]()
    t["tep_set_long_size"](h, long_size)
    ret = t["tep_parse_event"](h, text, len(text), system)
    keys = []
    for i in range(api.tep_get_events_count(h)):
        e = api.tep_get_event(h, i).contents
        keys.append((e.id, _ffi._s(e.system), _ffi._s(e.name),
                     [f.key() for f in _ffi._fields(e.format.common_fields)],
                     [f.key() for f in _ffi._fields(e.format.fields)], _ffi._s(e.print_fmt.format)))
    return (ret != 0, keys)


def _our_event(item):
    from deferstitch.tracecmd import formats
    text, system, long_size = item
    try:
        ev, _why = formats.parse_event(text, system, long_size)
    except formats.Crashes:
        return CRASH
    return (ev is None, [ev.key()] if ev else [])


NASTY = [b"[", b"]", b"(", b")", b";", b":", b"*", b"\n", b"\t", b" ", b'"', b"'", b"\\", b"\0",
         b"\x80", b"\xff", b"0x", b"-", b">", b"=", b"__attribute__((user))", b"__data_loc ",
         b"__rel_loc ", b"long ", b"char ", b"u8 ", b"[]", b"[2 * 4]", b"signed", b"field",
         b"LOCAL_PR_FMT", b"99999999999999999999", b"0x7fffffff", b"4294967295", b"08"]


def mutate(text, rnd, n):
    """n damaged copies of text: cut, a span dropped, a nasty token put in or over a byte,
    a line doubled."""
    out = []
    for _ in range(n):
        t = bytearray(text)
        for _k in range(rnd.choice((1, 1, 2, 3))):
            op, at = rnd.randrange(5), rnd.randrange(len(t) + 1)
            if op == 0:
                del t[at:]
            elif op == 1:
                del t[at:at + rnd.randrange(1, 12)]
            elif op == 2:
                t[at:at] = rnd.choice(NASTY)
            elif op == 3 and at < len(t):
                t[at:at + 1] = rnd.choice(NASTY)
            else:
                lines = bytes(t).split(b"\n")
                i = rnd.randrange(len(lines))
                lines.insert(i, lines[i])
                t = bytearray(b"\n".join(lines))
        out.append(bytes(t))
    return out


def _format_texts():
    """The format texts of the real capture and of the synthetic files, with their system."""
    texts = []
    for fmt in S.deferred(None, build=True).ftrace + S.deferred(None, build=True).systems:
        texts.append((fmt.text().encode(), fmt.system.encode()))
    if REAL.exists():
        meta = _meta(REAL)
        texts += [(t, b"ftrace") for _at, t in meta.ftrace] + [(t, s) for s, _at, t in meta.events]
    texts.append((b"name: a\nID: 7\nformat:\n\tfield:const char __attribute__((user)) * f;\t"
                  b"offset:8;\tsize:8;\tsigned:0;\n\tfield:__data_loc s8[] b;\toffset:16;\t"
                  b"size:4;\tsigned:1;\n\tfield:__rel_loc u32[] c;\toffset:20;\tsize:2;\t"
                  b"signed:0;\n\tfield:unsigned long d[0x3];\toffset:24;\tsize:24;\tsigned:0;\n"
                  b"\tfield:long e[];\toffset:48;\tsize:0;\n\tfield:char g[LEN + 1];\toffset:48;\t"
                  b"size:0;\n\nprint fmt: \"a\" \"b\"\n  \"c\", REC->d\n", b"x"))
    return texts


def test_damaged_format_texts_have_libtraceevents_verdict():
    """Every field, flag and size of what is kept, what is dropped, and where it crashes."""
    need_bookworm_libtraceevent()
    rnd = random.Random(20261205)
    items = []
    for text, system in _format_texts():
        items.append((text, system, 8))
        items += [(t, system, rnd.choice((4, 8))) for t in mutate(text, rnd, 60)]
    theirs = _in_children(items, _their_event)
    ours = [_our_event(item) for item in items]
    diff = [(item[0], a, b) for item, a, b in zip(items, ours, theirs) if a != b]
    assert not diff, (len(diff), diff[:2])
    verdicts = {(o if o == CRASH else (o[0], bool(o[1]))) for o in ours}
    assert {CRASH, (True, False), (False, True)} <= verdicts, verdicts     # all three were seen


def _their_kallsyms(item):
    import libtracecmd as _ffi
    text, addrs = item
    t = tep()
    h = t["tep_alloc"]()
    t["tep_parse_kallsyms"](h, text)
    return (t["tep_get_function_count"](h), [_ffi._s(_ffi.api.tep_find_function(h, a))
                                             for a in addrs])


KALLSYMS_ODD = (b"ffffffff81000000 T _stext\nffffffff81000000 t dup_a\nffffffff81000000 T dup_b\n"
                b"0000000000000000 A fixed_percpu_data\nffffffff81000100 a absolute\n"
                b"ffffffff81000200 t $x.1\nffffffff81000300 t ext4_read\t[ext4]\n\n"
                b"ffffffff81000400 W weak_one\nffffffff81000500 D data_sym\n"
                b"ffffffff81000050 T out_of_order\nffffffffc0000000 t mod_fn\t[mod]\n")


def test_damaged_kallsyms_have_libtraceevents_functions():
    """Symbol types dropped (A, a, $names), modules, duplicates, odd lines (the parse stops at
    the first it cannot read, keeping what came before)."""
    need_bookworm_libtraceevent()
    from deferstitch.tracecmd import formats
    rnd = random.Random(5)
    items = []
    for text in [KALLSYMS_ODD] + mutate(KALLSYMS_ODD, rnd, 300):
        ks = formats.Kallsyms(text)
        addrs = sorted({a + d for a in ks.addrs for d in (-1, 0, 1)} | {0, 0xffffffff81000001,
                                                                       (1 << 64) - 1})
        items.append((text, [a % (1 << 64) for a in addrs]))
    theirs = _in_children(items, _their_kallsyms)
    for (text, addrs), want in zip(items, theirs):
        ks = formats.Kallsyms(text)
        assert (len(ks), [ks.function(a) for a in addrs]) == want, text


def _their_comms(item):
    import libtracecmd as _ffi
    text, pids = item
    t = tep()
    h = t["tep_alloc"]()
    t["tep_parse_saved_cmdlines"](h, text)
    return [_ffi._s(_ffi.api.tep_data_comm_from_pid(h, p)) for p in pids]


def test_damaged_cmdlines_have_libtraceevents_comms():
    """A pid given twice (which one bsearch lands on), pid 0, spaces, odd lines."""
    need_bookworm_libtraceevent()
    from deferstitch.tracecmd import formats
    base = (b"1 init\n50 kworker/0:1\n100 workload\n100 renamed\n100 third\n7 a b  c \n"
            b"  8\tx\n-3 neg\n0 swapper\n4294967297 wraps\n200 other\r\n")
    rnd = random.Random(6)
    items = []
    for text in [base] + mutate(base, rnd, 300):
        pids = sorted(set(range(-4, 12)) | {50, 100, 101, 200, 1 << 32, (1 << 31) - 1})
        items.append((text, pids))
    theirs = _in_children(items, _their_comms)
    for (text, pids), want in zip(items, theirs):
        cl = formats.Cmdlines(text)
        assert [cl.comm(p) for p in pids] == want, text


def _their_long_size(item):
    text, long_size = item
    t = tep()
    h = t["tep_alloc"]()
    t["tep_parse_header_page"](h, text, len(text), long_size)
    return t["tep_get_header_page_size"](h)


def test_damaged_header_pages_give_libtraceevents_long_size():
    need_bookworm_libtraceevent()
    from deferstitch.tracecmd import formats
    rnd = random.Random(8)
    base = S.HEADER_PAGE.encode()
    items = [(t, rnd.choice((4, 8))) for t in [base, b""] + mutate(base, rnd, 300)]
    theirs = _in_children(items, _their_long_size)
    assert [formats.parse_header_page(t, ls) for t, ls in items] == theirs


def test_a_format_libtraceevent_crashes_on_is_refused_as_the_probe_refuses_it(tmp_path):
    """A field cut right after its '[': libtraceevent 1.7.1 strcmp()s a NULL token. The probe's
    child dies of it (one line, exit 2 today); formats.Events raises Crashes at the format."""
    need_bookworm_libtraceevent()
    from deferstitch.errors import FormatError
    import libtracecmd as _ffi
    from deferstitch.tracecmd import formats
    td = S.deferred(None, build=True)
    fmt = td.systems[0] = copy.copy(td.systems[0])     # not the module's own format
    text = fmt.text()
    fmt.text = lambda: text[:text.index("\n\n") + 2] + "\tfield:int x["
    bad = td.write(tmp_path / "cut.dat")
    with pytest.raises(FormatError, match="libtracecmd crashed opening it"):
        _ffi.Handle(str(bad))
    with pytest.raises(formats.Crashes):
        formats.Events(_meta(bad))


# -- ownfile.OwnFile: the metadata half of _ffi.Handle, assembled -------------------------------
def _own_and_theirs(path):
    import libtracecmd as _ffi
    from deferstitch.tracecmd import ownfile
    h = _ffi.Handle(str(path))
    try:
        theirs = _handle_view(h)
    finally:
        h.close()
    return _handle_view(ownfile.OwnFile(str(path))), theirs


def _handle_view(h):
    """What a handle says of its file's metadata, sampled where it answers per address/pid."""
    return {"events": [e.key() for e in h.events()], "cpus": h.cpus, "long_size": h.long_size,
            "page_size": h.page_size, "big_endian": h.big_endian, "compression": h.compression,
            "formats_not_parsed": h.formats_not_parsed, "common_layout": h.common_layout,
            "instances": h.instance_names(),
            "comms": [h.comm(p) for p in range(-1, 300)],
            "functions": [h.function(a) for a in range(0xffffffff80ffff00, 0xffffffff81200000,
                                                       0x3f1)]}


def test_ownfile_says_what_ffi_handle_says(traces):
    need_bookworm_libtraceevent()
    from deferstitch.errors import DeferstitchError
    compared = 0
    for path in traces:
        try:
            ours, theirs = _own_and_theirs(path)
        except DeferstitchError:
            continue
        assert ours == theirs, (path, {k: (ours[k], theirs[k]) for k in ours
                                       if ours[k] != theirs[k]})
        compared += 1
    assert compared >= 8, compared
    assert any(_handle_view(ownfile_of(p))["instances"] for p in traces if "instances" in p.name)


def ownfile_of(path):
    from deferstitch.tracecmd import ownfile
    return ownfile.OwnFile(str(path))


def test_ownfile_opens_a_zlib_v7_file_that_libtracecmd_13_cannot(tmp_path):
    """trace-cmd 3.4 (sid) converts to v7 with zlib; bookworm's libtracecmd refuses that file.
    Ours reads it, and its metadata is the zstd conversion's (which libtracecmd reads)."""
    from tracecmd_text import need_sid_run
    need_bookworm_libtraceevent()
    tool = need_sid_run()
    from deferstitch.errors import DeferstitchError
    import libtracecmd as _ffi
    from deferstitch.tracecmd import ownfile
    S.deferred(tmp_path / "d.dat")
    for compression in ("zlib", "zstd"):
        subprocess.run([tool, "trace-cmd", "convert", "-i", "./d.dat", "-o", "./%s.dat" % compression,
                        "--file-version", "7", "--compression", compression], check=True,
                       capture_output=True, cwd=tmp_path)
    with pytest.raises(DeferstitchError):
        _ffi.Handle(str(tmp_path / "zlib.dat"))
    zlib_view = _handle_view(ownfile.OwnFile(str(tmp_path / "zlib.dat")))
    assert zlib_view["compression"] == "zlib"
    ours, theirs = _own_and_theirs(tmp_path / "zstd.dat")
    assert ours == theirs
    assert dict(zlib_view, compression="zstd") == theirs


# -- the kallsyms index in C (deferstitch/_kallsyms.c), twin of formats.Kallsyms -----------------
def c_kallsyms():
    from conftest import need_built
    from deferstitch.tracecmd import pages
    need_built("the kallsyms index (deferstitch._tracedat.Kallsyms)", pages.Kallsyms is not None)
    return pages.Kallsyms


def _twin_addresses(ks, rnd, n=3000):
    """At, just around and between the symbols of formats.Kallsyms ks, below the first, past
    the last, 0, 2**64-1, and a few out of the 64 bits (masked: -1, 2**64 + 5)."""
    a = ks.addrs
    out = {0, 1, (1 << 64) - 1, -1, (1 << 64) + 5, rnd.getrandbits(64)}
    for i in rnd.sample(range(len(a)), min(n, len(a))):
        nxt = a[i + 1] if i + 1 < len(a) else a[i] + 0x1000
        out.update({a[i], a[i] - 1, a[i] + 1, (a[i] + nxt) // 2, nxt - 1})
    if len(a):
        out.update({a[0] - 1, a[-1], a[-1] + 1, a[-1] + (1 << 20)})
    return sorted(out)


def assert_twins(text, make, rnd, n=3000):
    """The C index of text is formats.Kallsyms': its count, every name in address order (the
    order of equal addresses with it) and function() around the symbols; the number of symbols."""
    from deferstitch.tracecmd import formats
    py, c = formats.Kallsyms(text), make(text)
    assert len(c) == len(py), text[:300]
    assert [c.name(i) for i in range(len(c))] == [py.name(i) for i in range(len(py))], text[:300]
    addrs = _twin_addresses(py, rnd, n)
    got, want = [c.function(a) for a in addrs], [py.function(a) for a in addrs]
    assert got == want, (text[:300], [(hex(a), x, y) for a, x, y in zip(addrs, got, want)
                                      if x != y][:5])
    return len(py)


def test_c_kallsyms_is_formats_kallsyms_on_every_trace_dat_and_a_big_made_up_kernel(traces):
    """The kallsyms of every trace.dat the tests carry or make (the real capture's: a kernel's
    100 000+ symbols) and tracecmd_synth's 200 000-symbol kernel."""
    make = c_kallsyms()
    from deferstitch.errors import DeferstitchError
    rnd, sizes = random.Random(11), []
    for path in traces:
        try:
            meta = _meta(path)
        except DeferstitchError:
            continue
        if meta is not None:
            sizes.append(assert_twins(meta.kallsyms, make, rnd))
    syms, _ = S.varied_kallsyms(200_000)
    sizes.append(assert_twins(S.kallsyms_text(syms), make, rnd, n=20000))
    assert len(sizes) >= 8 and max(sizes) >= 190_000 and sum(1 for n in sizes if n > 1) >= 4, sizes


def test_c_kallsyms_is_formats_kallsyms_on_damaged_texts():
    """The texts test_damaged_kallsyms_have_libtraceevents_functions gives libtraceevent (types
    dropped, equal addresses, odd lines), damaged copies of a made-up kernel's."""
    make = c_kallsyms()
    rnd = random.Random(12)
    syms, _ = S.varied_kallsyms(300, seed=3)
    made = S.kallsyms_text(syms)
    for text in [KALLSYMS_ODD] + mutate(KALLSYMS_ODD, rnd, 300) + mutate(made, rnd, 300):
        assert_twins(text, make, rnd, n=200)


def _fuzz_line(rnd):
    """A kallsyms line as sscanf may read it or not: spaces of every kind, signs, 0x, 1-20
    digits, any type, names long, empty, '$', NUL, non-UTF-8."""
    ws = lambda: rnd.choice([b"", b" ", b"\t", b"  ", b"\r", b"\v\f", b" \t "])   # noqa: E731
    digits = b"".join(rnd.choice([b"0", b"f", b"F", b"a", b"9", b"8", b"1"])
                      for _ in range(rnd.choice((1, 3, 15, 16, 16, 16, 17, 20))))
    addr = rnd.choice([b"", b"+", b"-", b"", b""]) + rnd.choice([b"", b"0x", b"0X", b"0", b""]) \
        + rnd.choice([digits, digits, b"", b"g", b"x"])
    name = rnd.choice([b"fn", b"$x.1", b"", b"\xff\xfe", b"caf\xc3\xa9", b"\xc3", b"a\0b",
                       b"n" * rnd.randrange(1, 600), b"x[mod]", b"\x80"])
    kind = rnd.choice([b"T", b"t", b"A", b"a", b"W", b"$", b"\xe9", b"", b"0"])
    tail = rnd.choice([b"", b"", b"\t[mod]", b" extra words", ws()])
    return ws() + addr + ws() + kind + ws() + name + tail


def test_c_kallsyms_is_formats_kallsyms_on_fuzzed_texts():
    """Random texts of good and odd lines: the parse stops at the same line, the same symbols
    kept, named the same (UTF-8 with "replace")."""
    make = c_kallsyms()
    rnd = random.Random(13)
    good = b"ffffffff81000000 T _stext\nffffffff81000400 t dup\nffffffff81000400 t dup2\n"
    counts = []
    for k in range(2000):
        lines = [_fuzz_line(rnd) if rnd.random() < 0.3 else good.split(b"\n")[rnd.randrange(3)]
                 for _ in range(rnd.randrange(1, 30))]
        text = rnd.choice([b"\n", b"\n\n", b"\r\n"]).join(lines)
        counts.append(assert_twins(text, make, rnd, n=50))
    assert sum(1 for n in counts if n == 0) > 50 and sum(1 for n in counts if n > 5) > 200, counts
    # the types the Python takes: a list that gives the text up, a bytearray, a memoryview
    held = [good]
    assert len(make(held)) == 3 and held == []
    assert len(make(bytearray(good))) == len(make(memoryview(good))) == 3
    with pytest.raises(TypeError):
        make("ffffffff81000000 T _stext\n")
    with pytest.raises(TypeError):
        make(good).function(1.5)
    with pytest.raises(IndexError):
        make(good).name(3)
    assert make(good).name(-1) == "dup"          # the last in address order: equal ones reversed


def test_ownfile_names_kernel_functions_with_the_c_index_unless_accel_is_0(tmp_path, monkeypatch):
    """OwnFile.function builds the C index where it is built, formats.Kallsyms with
    DEFERSTITCH_ACCEL=0; either way the same names, and the text is given up."""
    make = c_kallsyms()
    from deferstitch.tracecmd import formats
    path = S.deferred(tmp_path / "d.dat")
    meta = _meta(path)
    addrs = _twin_addresses(formats.Kallsyms(meta.kallsyms), random.Random(14), n=500)
    names = {}
    for accel, kind in (("1", make), ("0", formats.Kallsyms)):
        monkeypatch.setenv("DEFERSTITCH_ACCEL", accel)
        f = ownfile_of(path)
        names[accel] = [f.function(a) for a in addrs]
        assert type(f._kallsyms) is kind and f._kallsyms_text is None
        os.close(f.fd)
    assert names["1"] == names["0"] and any(names["0"]), names
