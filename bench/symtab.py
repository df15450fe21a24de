"""A .symtab of a million function symbols: how long loading it takes, ours against perf.

Usage:
    python3 bench/symtab.py [--n 1000000] [--dir /root/.cache/deferstitch-symtab] [--rounds 3]
                            [--before 14a68f0]

Builds (once per --n, into --dir, outside the repository) a program of N tiny functions from
generated assembly, the way a browser or a generated program carries a huge .symtab: names of
30-40 characters, a tenth of them without a size (perf extends those to the next symbol,
symbols__fixup_end), a seventh local, every 50th with a weak alias at its address
(symbols__fixup_duplicate). `main` calls spread-out functions through a table for a few seconds,
recorded with the host's `perf record -g`, so the samples name a few thousand of them. Then, per
round (rounds interleaved, median and [min-max] printed):

  ElfSymbols()        in-process load of the binary's symbols (what every command pays once)
  ds folded           python -m deferstitch folded FILE --symfs DIR --no-inline -q -o /dev/null
  ... (REV)           the same two with the deferstitch of git revision --before (default: the
                      last one before the column-wise loader), unpacked from git into --dir
  perf 7.2 script     tools/sid-perf script -i FILE --symfs DIR --no-inline (SID_BINDS puts the
                      binary at its recorded path in the chroot)
  perf 6.1 script     the host's perf script -i FILE --symfs DIR --no-inline

Run it from a checkout with the C modules built or not: only the ELF reader is timed here, and
it is Python either way.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SID_PERF = ROOT / "tools" / "sid-perf"
MAIN_C = r"""
#include <stdlib.h>
#include <time.h>
extern void (*const gen_table[])(void);
extern const long gen_count;
static double now(void) {
	struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}
int main(int argc, char **argv) {
	double until = now() + (argc > 1 ? atof(argv[1]) : 2.0);
	unsigned long i = 0;
	while (now() < until)
		for (int k = 0; k < 1000; k++, i += 7919)
			gen_table[i % gen_count]();
	return 0;
}
"""


def name(i):
    return "gen_module%04d_subsystem_handler%07d" % (i // 1000, i)


def write_asm(path, n):
    """N functions: push rbp; a short busy loop; ret."""
    with open(path, "w") as f:
        w = f.write
        w("\t.text\n")
        for i in range(n):
            s = name(i)
            if i % 7:
                w("\t.globl %s\n" % s)
            w("\t.type %s,@function\n\t.p2align 4\n%s:\n" % (s, s))
            if i % 50 == 0:
                w("\t.weak %s_alias\n\t.type %s_alias,@function\n%s_alias:\n" % (s, s, s))
            w("\tpush %rbp\n\tmov %rsp,%rbp\n\tmov $300,%ecx\n1:\tdec %ecx\n\tjnz 1b\n"
              "\tpop %rbp\n\tret\n")
            if i % 10:
                w("\t.size %s,.-%s\n" % (s, s))
                if i % 50 == 0:
                    w("\t.size %s_alias,.-%s_alias\n" % (s, s))
        w("\t.section .data.rel.ro,\"aw\"\n\t.globl gen_table\n\t.p2align 3\ngen_table:\n")
        for i in range(n):
            w("\t.quad %s\n" % name(i))
        w("\t.section .rodata\n\t.globl gen_count\n\t.p2align 3\ngen_count:\n\t.quad %d\n" % n)
        w("\t.section .note.GNU-stack,\"\",@progbits\n")


def build(work, n):
    """The program and its recording, made once per N: (binary, perf.data)."""
    work = work.resolve()
    exe, data = work / ("gen%d" % n), work / ("gen%d.data" % n)
    if exe.exists() and data.exists():
        return exe, data
    t0 = time.time()
    (work / "main.c").write_text(MAIN_C)
    write_asm(work / "funcs.s", n)
    subprocess.run(["gcc", "-O2", "-fno-omit-frame-pointer", "-o", exe, work / "main.c",
                    work / "funcs.s"], check=True)
    (work / "funcs.s").unlink()        # 360 MB for a million
    subprocess.run(["perf", "record", "-q", "-g", "-o", data, "--", exe, "3"], check=True)
    print("built %s and %s in %.0f s" % (exe, data, time.time() - t0), file=sys.stderr)
    return exe, data


def symfs(work, exe):
    """A --symfs directory with the binary at its recorded path."""
    d = work / "symfs"
    at = d / str(exe).lstrip("/")
    if not at.exists():
        at.parent.mkdir(parents=True, exist_ok=True)
        os.link(exe, at)
    return d


def timed(cmd, env=None, cwd=None):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, cwd=cwd or "/", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if r.returncode:
        raise SystemExit("%s: rc %d\n%s" % (cmd[0], r.returncode, r.stderr.decode()[-2000:]))
    return time.perf_counter() - t0


def load_once(exe, root=ROOT):
    """Seconds to load ElfSymbols(exe), in a fresh interpreter (nothing cached)."""
    code = ("import time,sys; t=time.perf_counter(); from deferstitch.symbols.elf import ElfSymbols;"
            "e=ElfSymbols(sys.argv[1]); print(time.perf_counter()-t, len(e.table))")
    out = subprocess.run([sys.executable, "-c", code, str(exe)], check=True, capture_output=True, cwd="/",
                         env=dict(os.environ, PYTHONPATH=str(root)), text=True).stdout.split()
    return float(out[0]), int(out[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000000)
    ap.add_argument("--dir", type=Path, default=Path("/root/.cache/deferstitch-symtab"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-perf", action="store_true", help="time ours only")
    ap.add_argument("--before", default="14a68f0", help="git revision to time too ('' for none)")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    exe, data = build(args.dir, args.n)
    sfs = symfs(args.dir, exe)
    roots = {"": ROOT}
    if args.before:
        old = args.dir / ("deferstitch-" + args.before)
        if not old.exists():
            old.mkdir()
            tar = subprocess.run(["git", "-C", ROOT, "archive", args.before, "deferstitch"],
                                 check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", old], input=tar, check=True)
            for so in (ROOT / "deferstitch").glob("*.so"):     # the same C modules: only the
                shutil.copy(so, old / "deferstitch")           # ELF reader differs
        roots[" (%s)" % args.before] = old
    rows = {}
    for tag, root in roots.items():
        env = dict(os.environ, PYTHONPATH=str(root))
        rows["ElfSymbols()" + tag] = lambda root=root: load_once(exe, root)[0]
        rows["ds folded" + tag] = lambda env=env: timed(
            [sys.executable, "-m", "deferstitch", "folded", str(data), "--symfs", str(sfs),
             "--no-inline", "-q", "-o", "/dev/null"], env=env)
    if not args.no_perf:
        if shutil.which("perf"):
            rows["perf 6.1 script"] = lambda: timed(["perf", "script", "-i", str(data), "--symfs",
                                                     str(sfs), "--no-inline"])
        if SID_PERF.exists() and os.geteuid() == 0:
            benv = dict(os.environ, SID_BINDS="%s:%s" % (exe.parent, exe.parent))
            rows["perf 7.2 script"] = lambda: timed([str(SID_PERF), "script", "-i", data.name,
                                                     "--no-inline"], env=benv, cwd=args.dir)
    print("symbols: %d in %s (.symtab %.1f MB)" % (load_once(exe)[1], exe, exe.stat().st_size / 1e6))
    got = {k: [] for k in rows}
    for _ in range(args.rounds):
        for k, f in rows.items():
            got[k].append(f())
    for k, v in got.items():
        print("%-26s %6.2f s  [%.2f-%.2f]" % (k, statistics.median(v), min(v), max(v)))


if __name__ == "__main__":
    main()
