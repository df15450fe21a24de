"""Names demangled as perf prints them (deferstitch/symbols/demangle.py): perf's own test vectors
for Java and OCaml, libstdc++'s __cxa_demangle for C++, and a C++ program built here, named
through every output of both file kinds, on the C engine and the Python path; --no-demangle
keeps the names as the binary has them. Rust: tests/test_demangle_rust.py."""
import gzip
import json
import os
import shutil
import subprocess

import pytest

import tracecmd_synth as S
from conftest import ROOT, need_built, run_cli
from deferstitch.symbols.demangle import Demangler, demangle, demangle_cxx, demangle_java, demangle_ocaml
from jit_synth import elf_functions, elf_segments, map_elf
from synth import Synth

ENGINES = pytest.mark.parametrize("accel", ["0", "1"], ids=["python", "engine"])
PID, BASE = 50, 0x560000000000

CXX_SRC = r"""
#include <unistd.h>
namespace shapes {
struct Widget { virtual long poke(int n); };
long Widget::poke(int n) { return getppid() + n; }
template <typename T> __attribute__((noinline)) T twice(T x) { return x + x + getppid(); }
}
int main(int argc, char **) {
    shapes::Widget w;
    return (int)(w.poke(argc) + shapes::twice<long>(argc));
}
"""
POKE, TWICE = "_ZN6shapes6Widget4pokeEi", "_ZN6shapes5twiceIlEET_S1_"
NAMES = {POKE: "shapes::Widget::poke(int)", TWICE: "long shapes::twice<long>(long)", "main": "main"}


def test_cxx_as_libstdcxx_prints_it():
    # libstdc++'s short forms (std::ostream, not binutils' std::basic_ostream<char, ...>)
    assert demangle("_ZNSo5flushEv") == "std::ostream::flush()"
    assert demangle("_ZN4node5StartEiPPc") == "node::Start(int, char**)"
    assert demangle("_Z3fooi.constprop.0") == "foo(int) [clone .constprop.0]"
    # a PLT entry: its symbol demangled, then @plt (perf 7.2: std::__basic_file<char>::fd()@plt)
    assert demangle("_ZNSt12__basic_fileIcE2fdEv@plt") == "std::__basic_file<char>::fd()@plt"
    assert demangle("free@plt") == "free@plt"
    # __cxa_demangle takes a bare type name too (perf calls it on every name)
    assert demangle_cxx("i") == "int"
    for plain in ("main", "getppid", "_start", "", "_Z"):
        assert demangle(plain) == plain


def test_java_as_perf():
    """tools/perf/tests/demangle-java-test.c's vectors, without their return type
    (JAVA_DEMANGLE_NORET, as perf names symbols)."""
    for mangled, want in [
            ("Ljava/lang/StringLatin1;equals([B[B)Z", "java.lang.StringLatin1.equals(byte[], byte[])"),
            ("Ljava/util/zip/ZipUtils;CENSIZ([BI)J", "java.util.zip.ZipUtils.CENSIZ(byte[], int)"),
            ("Ljava/util/regex/Pattern$BmpCharProperty;match(Ljava/util/regex/Matcher;ILjava/lang/"
             "CharSequence;)Z", "java.util.regex.Pattern$BmpCharProperty.match(java.util.regex."
                               "Matcher, int, java.lang.CharSequence)"),
            ("Ljava/lang/AbstractStringBuilder;appendChars(Ljava/lang/String;II)V",
             "java.lang.AbstractStringBuilder.appendChars(java.lang.String, int, int)"),
            ("Ljava/lang/Object;<init>()V", "java.lang.Object<init>()")]:
        assert demangle_java(mangled) == want
        assert demangle(mangled) == want
    assert demangle_java("foo()") is None and demangle_java("no parens") is None


def test_ocaml_as_perf():
    """util/demangle-ocaml.c: "caml" + an upper-case letter; "__" is ".", "$xx" a byte."""
    assert demangle_ocaml("main") is None
    assert demangle_ocaml("camlStdlib__array__map_154") == "Stdlib.array.map_154"
    assert demangle_ocaml("camlStdlib__anon_fn$5bstdlib$2eml$3a334$2c0$2d$2d54$5d_1453") == \
        "Stdlib.anon_fn[stdlib.ml:334,0--54]_1453"
    assert demangle_ocaml("camlStdlib__bytes__$2b$2b_2205") == "Stdlib.bytes.++_2205"
    assert demangle_ocaml("camlfoo") is None


def test_demangler_caches_and_can_be_off():
    d = Demangler()
    assert d(POKE) == NAMES[POKE] and d(POKE) is d(POKE) and d(None) is None
    off = Demangler(enabled=False)
    assert off(POKE) == POKE


# -- a C++ program built here, through every output ---------------------------------------------
def need(tool, pkg):
    if shutil.which(tool) is None:
        pytest.skip("%s not installed: apt-get install %s" % (tool, pkg))


@pytest.fixture(scope="module")
def cxx(tmp_path_factory):
    """(symfs, the program's path inside it, {mangled name: vaddr}, [(offset, vaddr, filesz)])."""
    need("g++", "g++")
    need("nm", "binutils")
    work = tmp_path_factory.mktemp("cxx")
    (work / "prog.cc").write_text(CXX_SRC)
    symfs = work / "symfs"
    exe = symfs / "opt" / "app" / "prog"
    exe.parent.mkdir(parents=True)
    subprocess.run(["g++", "-O1", "-fno-inline", "-fno-omit-frame-pointer", "-g0", "-o", exe,
                    work / "prog.cc"], check=True)
    funcs = elf_functions(exe)
    assert POKE in funcs and TWICE in funcs, sorted(funcs)
    return symfs, "/opt/app/prog", funcs, elf_segments(exe)


def perf_file(cxx, path):
    """A perf.data: the program's segments mapped in pid 50, one sample whose user half is
    poke <- twice <- main, each at +4."""
    symfs, exe, funcs, segs = cxx
    f = Synth()
    map_elf(f, PID, BASE, exe, segs, 10)
    user = [BASE + funcs[n] + 4 for n in (POKE, TWICE, "main")]
    f.sample(PID, 100, cookie=1)
    f.deferred(PID, 105, 1, user)
    return f.save(path)


def env(accel):
    e = dict(os.environ, DEFERSTITCH_ACCEL=accel)
    if accel == "1":
        need_built("the C engine (deferstitch._accel)", bool(list((ROOT / "deferstitch").glob("_accel*.so"))))
    return e


@ENGINES
@pytest.mark.parametrize("raw", [False, True], ids=["demangled", "no-demangle"])
def test_perf_outputs_name_cxx_as_perf(cxx, tmp_path, accel, raw):
    symfs = cxx[0]
    data = perf_file(cxx, tmp_path / "cxx.data")
    name = (lambda n: n) if raw else NAMES.get
    opt = ("--no-demangle",) if raw else ()
    e = env(accel)
    r = run_cli("script", data, "--symfs", symfs, *opt, env=e)
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode()
    for n in (POKE, TWICE):
        assert "%s+0x4 (/opt/app/prog)" % name(n) in text, text
    r = run_cli("folded", data, "--symfs", symfs, *opt, env=e)
    assert r.returncode == 0, r.stderr
    assert ";main;%s;%s;" % (name(TWICE), name(POKE)) in r.stdout.decode()
    out = tmp_path / "s.json"
    assert run_cli("export", data, "--symfs", symfs, "--format", "speedscope", "-o", out, *opt,
                   env=e).returncode == 0
    frames = {fr["name"] for fr in json.loads(out.read_text())["shared"]["frames"]}
    assert {name(POKE), name(TWICE)} <= frames
    pb = tmp_path / "p.pb.gz"
    assert run_cli("export", data, "--symfs", symfs, "--format", "pprof", "-o", pb, *opt, env=e).returncode == 0
    assert name(TWICE).encode() in gzip.decompress(pb.read_bytes())
    svg = tmp_path / "f.svg"
    assert run_cli("flamegraph", data, "--symfs", symfs, "-o", svg, *opt, env=e).returncode == 0
    assert 'data-name="%s"' % name(POKE) in svg.read_text()
    other = NAMES.get if raw else (lambda n: n)     # and never the other form
    assert other(POKE) not in text


def test_fleet_names_cxx_as_folded(cxx, tmp_path):
    pytest.importorskip("distributed", reason="Dask not installed: pip install 'deferstitch[fleet]'")
    data = perf_file(cxx, tmp_path / "cxx.data")
    single = run_cli("folded", data, "--symfs", cxx[0]).stdout.decode()
    assert NAMES[POKE] in single
    out = tmp_path / "fleet.folded"
    r = run_cli("fleet", data, "--symfs", cxx[0], "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.read_text() == single


def trace_file(cxx, path):
    """A trace.dat whose one event's user stack is poke <- main by (path, file offset)."""
    _symfs, exe, funcs, segs = cxx

    def file_off(vaddr):
        off, va, _sz = max(s for s in segs if s[1] <= vaddr)
        return vaddr - va + off
    td = S.TraceDat(1, [S.USER_UNWIND_COOKIE, S.USER_UNWIND_STACK], [S.GETPPID, S.INODE_CACHE], S.COMMS)
    td.event(0, S.T0, S.GETPPID, S.W, __syscall_nr=110)
    td.event(0, S.T0, S.USER_UNWIND_COOKIE, S.W, cookie=S.C1)
    td.event(0, S.T0 + 5, S.INODE_CACHE, S.W, inode=5, dev=1, path=exe)
    td.event(0, S.T0 + 9, S.USER_UNWIND_STACK, S.W, cookie=S.C1,
             stack=[file_off(funcs[POKE] + 4), file_off(funcs["main"] + 4)], inodes=[5, 5], dev=[1, 1])
    return td.write(path)


@pytest.mark.parametrize("raw", [False, True], ids=["demangled", "no-demangle"])
def test_trace_outputs_name_cxx_as_perf(cxx, tmp_path, raw):
    path = trace_file(cxx, tmp_path / "cxx.dat")
    opt = ("--no-demangle",) if raw else ()
    poke = POKE if raw else NAMES[POKE]
    r = run_cli("trace", "script", path, "--symfs", cxx[0], *opt)
    assert r.returncode == 0, r.stderr
    assert "%s+0x4 (/opt/app/prog)" % poke in r.stdout.decode()
    r = run_cli("trace", "folded", path, "--symfs", cxx[0], *opt)
    assert r.stdout.decode() == "workload;main;%s 1\n" % poke
    svg = tmp_path / "t.svg"
    assert run_cli("trace", "flamegraph", path, "--symfs", cxx[0], "-o", svg, *opt).returncode == 0
    assert 'data-name="%s"' % poke in svg.read_text()
