"""C++ programs with DWARF of real size, recorded with the host's perf: the inputs of bench/run.py --dwarf.

Usage:
    python3 bench/dwarfgen.py small          # build (once) and record; prints the directory
    python3 bench/dwarfgen.py large --force  # build again even if cached
    python3 bench/dwarfgen.py python         # CPython built with -g (pyenv) running json/re/decimal

A program is N compile units that each include one generated header of many types (structs with
inline methods, class templates, always-inline helper chains 6 deep), instantiate the templates
with their own types and run hot loops through the helpers, so that samples land in
DW_TAG_inlined_subroutine chains; main() spreads a few seconds of CPU over every unit (a few
units hotter than the rest). Every header type is in every unit's DWARF
(-fno-eliminate-unused-debug-types), as in a C++ program whose units use most of their headers:
the size of .debug_info grows with units x header types while compiling stays cheap.

Built with `g++ -O2 -g -fno-omit-frame-pointer` (-j2) into CACHE/dwarf-SIZE/ (outside the
checkout) and recorded there with `perf record -g` (the host's perf). Everything is generated
from the size's numbers alone; a directory is built again only when its `done` stamp is missing
or names other numbers. The symfs next to it (`symfs/`) holds every file the recording mapped, at its
recorded path (hard links or copies), so that deferstitch and perf 7.2 read the same files.
"""
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

CACHE = Path(os.environ.get("DEFERSTITCH_BENCH_DIR", Path.home() / ".cache" / "deferstitch-bench"))
# name: (units, header types); .debug_info is about units x types x 0.2 KB
SIZES = {"small": (250, 1000), "medium": (1000, 1000), "large": (2600, 1000)}
VERSION = 1                 # bump when the generated sources change
SECONDS = 4                 # of CPU the program runs
FREQ = 1999                 # perf record -F
CXXFLAGS = ["-O2", "-g", "-fno-omit-frame-pointer", "-fno-eliminate-unused-debug-types"]
PY_WORKLOAD = """\
import decimal, json, re, time
end = time.process_time() + %d
doc = {"k%%d" %% i: [i, str(i) * 3, {"x": i / 7}] for i in range(300)}
rx = re.compile(r"(\\w+)@(\\w+)\\.(com|org)")
text = " ".join("user%%d@host%%d.com" %% (i, i) for i in range(300))
decimal.getcontext().prec = 60
while time.process_time() < end:
    json.loads(json.dumps(doc))
    rx.findall(text)
    sum(decimal.Decimal(i).sqrt() for i in range(1, 60))
""" % SECONDS


def header(ntypes):
    """bench.h: ntypes structs, two class templates, helper chains (always inlined)."""
    out = ["#pragma once", "#include <cstddef>", "namespace bench {"]
    for d in range(6):          # chainC_d calls chainC_(d-1): 6 inlined frames at the bottom
        for c in range(4):
            call = "x * %d + %d" % (2 * c + 3, d) if d == 0 else "chain%d_%d(x ^ (x >> %d)) + %d" % (c, d - 1, d + 1, c)
            out.append("__attribute__((always_inline)) inline long chain%d_%d(long x) { return %s; }"
                       % (c, d, call))
    for t in range(ntypes):
        nxt = "T%d" % (t - 1) if t else "void"
        out.append("struct T%d {\n  int id; unsigned flags; double weight; long slots[%d];\n"
                   "  const char *name; %s *link;\n"
                   "  int get() const { return id + (int)flags; }\n"
                   "  void set(int v) { id = v; flags ^= %du; }\n"
                   "  double score(double s) const { return weight * s + slots[0]; }\n};"
                   % (t, 2 + t % 5, nxt, t))
    out.append("""\
template <class X, int N> struct Box {
  X items[N];
  long fold(long seed) const {
    long s = seed;
    for (int i = 0; i < N; i++) s = chain0_5(s + items[i].key());
    return s;
  }
  void fill(long v) { for (int i = 0; i < N; i++) items[i].put(v + i); }
};
template <class K, class V> struct Pair {
  K k; V v;
  __attribute__((always_inline)) long mix(long x) const { return chain1_5(x + (long)k) ^ (long)v; }
};
}""")
    return "\n".join(out) + "\n"


def unit(u, ntypes):
    """uNNNN.cpp: its own item type, the templates instantiated with it, two hot functions."""
    n = 2 + u % 7
    return """\
#include "bench.h"
namespace u%(u)d {
struct Item {
  long v; bench::T%(t)d *meta;
  long key() const { return v * %(k)d; }
  void put(long x) { v = x ^ %(u)d; }
};
}
template struct bench::Box<u%(u)d::Item, %(n)d>;
namespace u%(u)d {
__attribute__((noinline)) long hot_chain(long n) {
  long s = %(u)d;
  for (long i = 0; i < n; i++) s += bench::chain%(c)d_5(i ^ s) + bench::chain%(c2)d_3(s);
  return s;
}
__attribute__((noinline)) long hot_box(long n) {
  bench::Box<Item, %(n)d> b;
  bench::Pair<int, long> p{%(u)d, n};
  b.fill(n);
  long s = 0;
  for (long i = 0; i < n / %(n)d; i++) s += b.fold(i) + p.mix(s);
  return s;
}
}
long unit_%(u)d(long n) { return u%(u)d::hot_chain(n) + u%(u)d::hot_box(n); }
""" % {"u": u, "t": u % ntypes, "k": 3 + u % 11, "n": n, "c": u % 4, "c2": (u + 1) % 4}


def main_cpp(nunits):
    """main.cpp: every unit every round (units that are multiples of 16: 20x the work) until
    argv[1] seconds of CPU have passed."""
    decls = "\n".join("long unit_%d(long);" % u for u in range(nunits))
    table = ",\n".join("  unit_%d" % u for u in range(nunits))
    return """\
#include <cstdio>
#include <cstdlib>
#include <ctime>
%s
static long (*const units[])(long) = {
%s
};
static double cpu() { timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv) {
  double end = cpu() + (argc > 1 ? atof(argv[1]) : 4);
  long acc = 0;
  while (cpu() < end)
    for (unsigned u = 0; u < sizeof units / sizeof units[0]; u++)
      acc += units[u](u %% 16 ? 2000 : 40000);
  printf("%%ld\\n", acc);
  return 0;
}
""" % (decls, table)


def debug_info_size(binary):
    """Bytes of .debug_info (readelf -S)."""
    out = subprocess.run(["readelf", "-SW", str(binary)], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.replace("[ ", "[").split()
        if ".debug_info" in f:
            return int(f[f.index(".debug_info") + 4], 16)
    return 0


def build(name, force=False):
    """CACHE/dwarf-NAME with prog, perf.data and symfs/, built and recorded if missing (one
    build at a time: another run waits for it rather than removing what it is making)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ("dwarf-%s.lock" % name), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return build_python(force) if name == "python" else build_program(name, force)


def build_program(name, force):
    """The generated program of size ``name``: sources, make -j2, its record."""
    nunits, ntypes = SIZES[name]
    d = CACHE / ("dwarf-%s" % name)
    want = {"version": VERSION, "units": nunits, "types": ntypes, "seconds": SECONDS, "freq": FREQ}
    stamp = d / "done"
    if not force and stamp.exists() and {k: v for k, v in json.loads(stamp.read_text()).items()
                                         if k in want} == want:
        return d
    shutil.rmtree(d, ignore_errors=True)
    src = d / "src"
    src.mkdir(parents=True)
    (src / "bench.h").write_text(header(ntypes))
    for u in range(nunits):
        (src / ("u%04d.cpp" % u)).write_text(unit(u, ntypes))
    (src / "main.cpp").write_text(main_cpp(nunits))
    cpps = sorted(p.name for p in src.glob("*.cpp"))
    (src / "Makefile").write_text(
        "CXXFLAGS = %s\nOBJS = %s\n../prog: $(OBJS)\n\t$(CXX) -o $@ $(OBJS)\n"
        "%%.o: %%.cpp bench.h\n\t$(CXX) $(CXXFLAGS) -c $< -o $@\n"
        % (" ".join(CXXFLAGS), " ".join(c[:-4] + ".o" for c in cpps)))
    print("dwarfgen: compiling %d units x %d header types in %s (-j2)" % (nunits, ntypes, d), file=sys.stderr)
    t0 = time.perf_counter()
    subprocess.run(["make", "-s", "-j2"], cwd=src, check=True)
    compile_s = time.perf_counter() - t0
    for o in src.glob("*.o"):
        o.unlink()
    info = dict(want, compile_seconds=round(compile_s, 1), debug_info_bytes=debug_info_size(d / "prog"))
    record(d, [str(d / "prog"), str(SECONDS)])
    stamp.write_text(json.dumps(info, indent=1))
    print("dwarfgen: %s: .debug_info %.0f MB, compiled in %.0f s" % (name, info["debug_info_bytes"] / 1e6,
                                                                      compile_s), file=sys.stderr)
    return d


def python_binary():
    """A pyenv CPython whose libpython has .debug_info (the newest), or None."""
    for v in sorted(Path.home().glob(".pyenv/versions/3.*"), key=lambda p: [int(x) for x in
                    p.name.split(".") if x.isdigit()], reverse=True):
        libs = sorted(v.glob("lib/libpython3*.so.1.0"))
        if libs and (v / "bin" / "python3").exists() and debug_info_size(libs[0]):
            return v / "bin" / "python3", libs[0]
    return None


def build_python(force):
    """CACHE/dwarf-python: the workload above run by a CPython built with -g."""
    found = python_binary()
    if found is None:
        raise SystemExit("dwarfgen: no CPython with debug info in ~/.pyenv/versions")
    py, lib = found
    d = CACHE / "dwarf-python"
    want = {"version": VERSION, "python": str(py.resolve()), "seconds": SECONDS, "freq": FREQ}
    stamp = d / "done"
    if not force and stamp.exists() and {k: v for k, v in json.loads(stamp.read_text()).items()
                                         if k in want} == want:
        return d
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    (d / "workload.py").write_text(PY_WORKLOAD)
    record(d, [str(py.resolve()), "workload.py"])
    stamp.write_text(json.dumps(dict(want, debug_info_bytes=debug_info_size(lib)), indent=1))
    return d


def record(d, argv):
    """perf record -g (the host's perf) of argv in d, then symfs/: every file it mapped."""
    subprocess.run(["perf", "record", "-q", "-N", "-g", "-F", str(FREQ), "-o", "perf.data.tmp", "--"]
                   + argv, cwd=d, check=True, stdout=subprocess.DEVNULL)
    os.replace(d / "perf.data.tmp", d / "perf.data")
    out = subprocess.run(["perf", "script", "-i", "perf.data", "--show-mmap-events", "-F", "comm"],
                         cwd=d, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        path = line.split()[-1] if "PERF_RECORD_MMAP" in line else ""
        dst = d / "symfs" / path.lstrip("/")
        if path.startswith("/") and os.path.isfile(path) and not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(os.path.realpath(path), dst)
            except OSError:
                shutil.copy2(path, dst)


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0] not in list(SIZES) + ["python"]:
        raise SystemExit(__doc__)
    print(build(args[0], force="--force" in args))
