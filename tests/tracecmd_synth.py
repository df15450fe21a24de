"""Write trace.dat files (trace-cmd.dat(5), version 6) carrying ftrace's deferred user stack events.

No released kernel emits them (the series "tracing: Deferred unwinding of user space stack
traces" v6, Aug 2025, is not merged), so the tests make their own files, with the v6 event
formats exactly as that series' patches define them, and check that
the real ``trace-cmd report`` reads them.

    python3 tests/tracecmd_synth.py OUT.dat [deferred|variant|userstack|instances|missed]
    python3 tests/tracecmd_synth.py OUT.dat big|varied [MIB [NSYMS]]

File layout written here (v6, little endian, 8-byte longs, 4096-byte pages):

    "\\x17\\x08\\x44tracing6\\0" u8 endian u8 long_size u32 page_size
    "header_page\\0" u64 size, text      "header_event\\0" u64 size, text
    u32 n, n x (u64 size, ftrace format)                     events/ftrace/*/format
    u32 nsys, nsys x ("system\\0", u32 n, n x (u64 size, format))
    u32 size, kallsyms     u32 size, printk_formats     u64 size, saved_cmdlines
    u32 cpus  "options  \\0" options... u16 0  "flyrecord\\0"  cpus x (u64 offset, u64 size)
    page-aligned CPU data: ring buffer pages
    per instance (``trace-cmd record -B NAME``), at the offset its BUFFER option gives:
        "flyrecord\\0"  cpus x (u64 offset, u64 size), then its page-aligned CPU data

    option { u16 id; u32 size; u8 data[size]; }    BUFFER (3): u64 offset, "NAME\\0"
        (trace-cmd's trace-output.c writes it with offset 0, then patches in where the
        instance's flyrecord went; libtracecmd's handle_options reads it so)

    ring buffer page { u64 timestamp; u64 commit; char data[4080]; }  commit: bytes of data,
        bit 31 MISSING_EVENTS, bit 30 MISSING_STORED (then a u64 count right after the data)
    event { u32 type_len:5, time_delta:27; u32 array[]; }   type_len 1..28: 4*type_len bytes
        of payload; 0: array[0] = payload length + 4, payload after it; 30: TIME_EXTEND
        (delta = array[0] << 27 | time_delta)
"""
import random
import struct
import sys

PAGE = 4096
MISSING_EVENTS = 1 << 31
MISSING_STORED = 1 << 30
TRACECMD_OPTION_BUFFER = 3                  # enum tracecmd_file_options (trace-cmd.h)
TIME_EXTEND = 30
ULONG_MAX = (1 << 64) - 1

HEADER_PAGE = ("\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
               "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
               "\tfield: char overwrite;\toffset:8;\tsize:1;\tsigned:0;\n"
               "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n")
HEADER_EVENT = ("# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n"
                "\tarray       :   32 bits\n\n\tpadding     : type == 29\n"
                "\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n")

COMMON = [("unsigned short", "common_type", 0, 2, 0), ("unsigned char", "common_flags", 2, 1, 0),
          ("unsigned char", "common_preempt_count", 3, 1, 0), ("int", "common_pid", 4, 4, 1)]


class EventFormat:
    """One events/<system>/<name>/format: fields (type, name, offset, size, signed) and how to pack."""

    def __init__(self, system, name, id_, fields, print_fmt, fixed_size):
        self.system, self.name, self.id = system, name, id_
        self.fields, self.print_fmt, self.fixed_size = fields, print_fmt, fixed_size

    def text(self):
        lines = ["name: %s" % self.name, "ID: %d" % self.id, "format:"]
        for t, n, off, size, signed in COMMON:
            lines.append("\tfield:%s %s;\toffset:%d;\tsize:%d;\tsigned:%d;" % (t, n, off, size, signed))
        lines.append("")
        for t, n, off, size, signed in self.fields:
            if t.startswith(("__data_loc", "__rel_loc")):
                decl = "%s %s" % (t, n)            # "__data_loc unsigned long[] stack"
            elif "[" in t:
                base, arr = t.split("[", 1)
                decl = "%s %s[%s" % (base.strip(), n, arr)
            else:
                decl = "%s %s" % (t, n)
            lines.append("\tfield:%s;\toffset:%d;\tsize:%d;\tsigned:%d;" % (decl, off, size, signed))
        lines.append("")
        lines.append("print fmt: %s" % self.print_fmt)
        return "\n".join(lines) + "\n"


def _fmt(system, name, id_, fields, print_fmt):
    end = max([off + size for _t, _n, off, size, _s in fields] + [8])
    return EventFormat(system, name, id_, fields, print_fmt, (end + 7) & ~7)


# -- the v6 series' ftrace entries (kernel/trace/trace_entries.h, FTRACE_ENTRY -> system ftrace)
KERNEL_STACK = _fmt("ftrace", "kernel_stack", 4, [("int", "size", 8, 4, 1), ("unsigned long[8]", "caller", 16, 64, 0)],
                    '"\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n" "\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n" '
                    '"\\t=> %ps\\n\\t=> %ps\\n", ' + ", ".join("(void *)REC->caller[%d]" % i for i in range(8)))
USER_STACK = _fmt("ftrace", "user_stack", 12, [("unsigned int", "tgid", 8, 4, 0), ("unsigned long[8]", "caller", 16, 64, 0)],
                  KERNEL_STACK.print_fmt)
USER_UNWIND_COOKIE = _fmt("ftrace", "user_unwind_cookie", 20, [("u64", "cookie", 8, 8, 0)],
                          '"cookie=%lld", REC->cookie')
USER_UNWIND_STACK = _fmt("ftrace", "user_unwind_stack", 21,
                         [("u64", "cookie", 8, 8, 0), ("__data_loc unsigned long[]", "stack", 16, 4, 0),
                          ("__data_loc unsigned long[]", "inodes", 20, 4, 0),
                          ("__data_loc unsigned int[]", "dev", 24, 4, 0)],
                         '"cookie=%lld\\n%s%s%s", REC->cookie, '
                         '__print_dynamic_array(stack, sizeof(unsigned long)), '
                         '__print_dynamic_array(inodes, sizeof(unsigned long)), '
                         '__print_dynamic_array(dev, sizeof(unsigned long))')
# kernel/trace/trace_inode_cache.h (patch 6/6), TRACE_SYSTEM inode_cache; __string -> __data_loc char[]
INODE_CACHE = _fmt("inode_cache", "inode_cache", 1500,
                   [("unsigned long", "inode", 8, 8, 0), ("unsigned int", "dev", 16, 4, 0),
                    ("__data_loc char[]", "path", 20, 4, 0)],
                   '"inode=%lu dev=[%u:%u] path=%s", REC->inode, ((unsigned int) ((REC->dev) >> 20)), '
                   '((unsigned int) ((REC->dev) & ((1U << 20) - 1))), __get_str(path)')
# The proposed variant (Steven, after Linus' objection): keyed by a hash, no inode/dev.
INODE_CACHE_HASH = _fmt("inode_cache", "inode_cache", 1500,
                        [("unsigned long", "hash", 8, 8, 0), ("__data_loc char[]", "path", 16, 4, 0)],
                        '"hash=%lx path=%s", REC->hash, __get_str(path)')
USER_UNWIND_STACK_HASH = _fmt("ftrace", "user_unwind_stack", 21,
                              [("u64", "cookie", 8, 8, 0), ("__data_loc unsigned long[]", "stack", 16, 4, 0),
                               ("__data_loc unsigned long[]", "hash", 20, 4, 0)],
                              '"cookie=%lld\\n%s%s", REC->cookie, '
                              '__print_dynamic_array(stack, sizeof(unsigned long)), '
                              '__print_dynamic_array(hash, sizeof(unsigned long))')
# Traced events (formats as Linux 6.x/7.x tracefs shows them).
GETPPID = _fmt("syscalls", "sys_enter_getppid", 237, [("int", "__syscall_nr", 8, 4, 1)], '""')
READ = _fmt("syscalls", "sys_enter_read", 650,
            [("int", "__syscall_nr", 8, 4, 1), ("unsigned int", "fd", 16, 8, 0),
             ("char *", "buf", 24, 8, 0), ("size_t", "count", 32, 8, 0)],
            '"fd: 0x%08lx, buf: 0x%08lx, count: 0x%08lx", ((unsigned long)(REC->fd)), '
            '((unsigned long)(REC->buf)), ((unsigned long)(REC->count))')
EXIT = _fmt("sched", "sched_process_exit", 300,
            [("char[16]", "comm", 8, 16, 0), ("pid_t", "pid", 24, 4, 1), ("int", "prio", 28, 4, 1)],
            '"comm=%s pid=%d prio=%d", REC->comm, REC->pid, REC->prio')
WORK = _fmt("workqueue", "workqueue_execute_start", 400,
            [("void *", "work", 8, 8, 0), ("void *", "function", 16, 8, 0)],
            '"work struct %p: function %ps", REC->work, REC->function')

# __rel_loc fields (fprobe/eprobe events use them), a long string (type_len 0 records).
REL = _fmt("test", "rel_loc_event", 900,
           [("__rel_loc char[]", "msg", 8, 4, 0), ("__rel_loc unsigned int[]", "vals", 12, 4, 0),
            ("int", "n", 16, 4, 1)],
           '"n=%d msg=%s", REC->n, __get_rel_str(msg)')

KALLSYMS = {0xffffffff81000000: "_stext", 0xffffffff81100000: "do_syscall_64",
            0xffffffff81100400: "entry_SYSCALL_64_after_hwframe", 0xffffffff81200000: "ksys_read",
            0xffffffff81300000: "process_one_work", 0xffffffff81300800: "worker_thread",
            0xffffffff81400000: "do_exit", 0xffffffff81ffffff: "_etext"}


def kaddr(name, off=0x10):
    return next(a for a, n in KALLSYMS.items() if n == name) + off


def pack_event(fmt, pid, values, long_size=8):
    """Payload bytes of one event: common fields, fixed fields, then __data_loc data."""
    buf = bytearray(fmt.fixed_size)
    struct.pack_into("<HBBi", buf, 0, fmt.id, 0, 0, pid)
    tail = bytearray()
    for t, n, off, size, signed in fmt.fields:
        v = values.get(n)
        if t.startswith(("__data_loc", "__rel_loc")):
            if v is None:
                v = b"" if "char" in t else []
            if "char" in t:
                data = (v.encode() if isinstance(v, str) else v) + b"\0"
            else:
                el = long_size if "long" in t else 4
                data = b"".join(int(x & ((1 << (8 * el)) - 1)).to_bytes(el, "little") for x in v)
            start = fmt.fixed_size + len(tail)
            if t.startswith("__rel_loc"):           # counted from the end of this u32
                start -= off + 4
            struct.pack_into("<I", buf, off, start | (len(data) << 16))
            tail += data
            while len(tail) % 4:
                tail += b"\0"
        elif "[" in t:
            if "char" in t:
                raw = (v or "").encode()[:size - 1]
                buf[off:off + len(raw)] = raw
            else:
                el = size // int(t.split("[")[1].rstrip("]"))
                for i, x in enumerate(v or []):
                    buf[off + i * el:off + (i + 1) * el] = int(x).to_bytes(el, "little")
        elif v is not None:
            buf[off:off + size] = int(v).to_bytes(size, "little", signed=bool(signed))
    return bytes(buf + tail)


class CpuBuffer:
    """The ring buffer pages of one CPU; ``drop(n)`` starts a new page saying n events were lost."""

    def __init__(self):
        self.pages = []          # [page ts, events bytearray, missed]
        self.last = None

    def _new_page(self, ts, missed=0):
        self.pages.append([ts, bytearray(), missed])
        self.last = ts

    def add(self, ts, payload):
        if len(payload) % 4:
            payload += b"\0" * (4 - len(payload) % 4)
        if len(payload) <= 28 * 4:
            ev = struct.pack("<I", len(payload) // 4)
        else:
            ev = struct.pack("<II", 0, len(payload) + 4)
        room = PAGE - 16 - 8          # keep 8 bytes for a stored missed-events count
        if not self.pages or len(self.pages[-1][1]) + len(ev) + len(payload) + 8 > room:
            self._new_page(ts)
        page = self.pages[-1]
        delta = ts - self.last
        assert delta >= 0, "events must be added in time order per CPU"
        head = b""
        if delta >= 1 << 27:
            head = struct.pack("<II", TIME_EXTEND | ((delta & ((1 << 27) - 1)) << 5), delta >> 27)
            delta = 0
        ev = struct.pack("<I", struct.unpack_from("<I", ev)[0] | (delta << 5)) + ev[4:]
        page[1] += head + ev + payload
        self.last = ts

    def drop(self, ts, missed):
        self._new_page(ts, missed)

    def data(self):
        out = bytearray()
        for ts, events, missed in self.pages:
            commit = len(events)
            body = bytes(events)
            if missed:
                commit |= MISSING_EVENTS | MISSING_STORED
                body += struct.pack("<Q", missed)
            out += struct.pack("<QQ", ts, commit) + body + b"\0" * (PAGE - 16 - len(body))
        return bytes(out)


class TraceDat:
    """A v6 trace.dat being built: ``event(cpu, ts, fmt, pid, **fields)``, then ``write(path)``."""

    def __init__(self, cpus, ftrace_formats, system_formats, comms, instances=(), keep=True,
                 kallsyms=None):
        self.ncpus = cpus
        self.keep = keep        # False: no self.records (varied()'s large files)
        self.kallsyms = kallsyms    # the kallsyms text (bytes); None: KALLSYMS
        self.cpus = [CpuBuffer() for _ in range(cpus)]
        self.ftrace, self.systems, self.comms = ftrace_formats, system_formats, comms
        # name -> its own per-CPU ring buffers (a ``-B NAME`` instance: same CPU count)
        self.instances = {name: [CpuBuffer() for _ in range(cpus)] for name in instances}
        self.records = []       # (buffer or None, cpu, ts, fmt, pid, values) as written: stitched()
        self.drops = []         # (buffer or None, cpu, ts, missed)
        self.options = []       # (id, data) more options, after the BUFFER ones

    def _buffers(self, buffer):
        return self.cpus if buffer is None else self.instances[buffer]

    def event(self, cpu, ts, fmt, common_pid, buffer=None, **values):
        """One event on ``cpu`` of the top buffer, or of instance ``buffer``."""
        self._buffers(buffer)[cpu].add(ts, pack_event(fmt, common_pid, values))
        if self.keep:
            self.records.append((buffer, cpu, ts, fmt, common_pid, values))

    def raw(self, cpu, ts, payload):
        """One event already packed (not kept in self.records)."""
        self.cpus[cpu].add(ts, payload)

    def drop(self, cpu, ts, missed, buffer=None):
        self._buffers(buffer)[cpu].drop(ts, missed)
        self.drops.append((buffer, cpu, ts, missed))

    def write(self, path):
        out = bytearray(b"\x17\x08\x44tracing6\0" + struct.pack("<BBI", 0, 8, PAGE))
        for name, text in ((b"header_page\0", HEADER_PAGE), (b"header_event\0", HEADER_EVENT)):
            out += name + struct.pack("<Q", len(text)) + text.encode()
        out += struct.pack("<I", len(self.ftrace))
        for f in self.ftrace:
            t = f.text().encode()
            out += struct.pack("<Q", len(t)) + t
        systems = {}
        for f in self.systems:
            systems.setdefault(f.system, []).append(f)
        out += struct.pack("<I", len(systems))
        for name, fmts in systems.items():
            out += name.encode() + b"\0" + struct.pack("<I", len(fmts))
            for f in fmts:
                t = f.text().encode()
                out += struct.pack("<Q", len(t)) + t
        ks = self.kallsyms
        if ks is None:
            ks = "".join("%016x T %s\n" % (a, n) for a, n in sorted(KALLSYMS.items())).encode()
        out += struct.pack("<I", len(ks)) + ks
        out += struct.pack("<I", 0)                                   # printk formats
        cl = "".join("%d %s\n" % (p, c) for p, c in sorted(self.comms.items())).encode()
        out += struct.pack("<Q", len(cl)) + cl
        out += struct.pack("<I", self.ncpus) + b"options  \0"
        patch = {}                  # instance name -> where its BUFFER option's offset goes
        for name in self.instances:
            body = name.encode() + b"\0"
            out += struct.pack("<HI", TRACECMD_OPTION_BUFFER, 8 + len(body))
            patch[name] = len(out)
            out += struct.pack("<Q", 0) + body
        for oid, data in self.options:
            out += struct.pack("<HI", oid, len(data)) + data
        out += struct.pack("<H", 0)
        self._flyrecord(out, self.cpus)
        for name, cpus in self.instances.items():
            out += b"\0" * (-len(out) % PAGE)
            struct.pack_into("<Q", out, patch[name], len(out))
            self._flyrecord(out, cpus)
        with open(path, "wb") as f:
            f.write(out)
        return path

    @staticmethod
    def _flyrecord(out, cpus):
        """Append a flyrecord section to out: its mark, the CPU table, each CPU's pages."""
        out += b"flyrecord\0"
        datas = [c.data() for c in cpus]
        start = (len(out) + 16 * len(datas) + PAGE - 1) // PAGE * PAGE
        offsets = []
        for d in datas:
            offsets.append((start, len(d)))
            start += (len(d) + PAGE - 1) // PAGE * PAGE
        for off, size in offsets:
            out += struct.pack("<QQ", off, size)
        for (off, _size), d in zip(offsets, datas):
            out += b"\0" * (off - len(out)) + d


# -- what stitching the written records must give -----------------------------------------------
STACKS = ("user_unwind_stack", "user_unwind_cookie", "kernel_stack", "user_stack", "inode_cache")


class Traced:
    """A traced event of the records and what the stitching must make of it: ``kernel`` its
    kernel_stack's addresses, ``cookie`` its user_unwind_cookie (None: passed through), ``user``
    [(ip, dso)] of the user_unwind_stack its task wrote for that cookie in its buffer (None: no
    such stack, unmatched) and ``after`` whether that stack was written before the event."""

    def __init__(self, buffer, cpu, ts, fmt, pid):
        self.buffer, self.cpu, self.ts, self.fmt, self.pid = buffer, cpu, ts, fmt, pid
        self.kernel, self.cookie, self.user, self.after = [], None, None, False


def stitched(td):
    """[Traced] in write order, from td.records alone (the synthesizer's own list, not the
    reader): an event is stitched when its task wrote a stack for its cookie in its buffer."""
    traced, stacks, paths, last = [], {}, {}, {}
    for buffer, cpu, ts, fmt, pid, values in td.records:
        if fmt.name not in STACKS:
            ev = last[(buffer, cpu)] = Traced(buffer, cpu, ts, fmt, pid)
            traced.append(ev)
            continue
        ev = last.get((buffer, cpu))
        same = ev is not None and (ev.ts, ev.pid) == (ts, pid)
        if fmt.name == "kernel_stack" and same:
            ev.kernel = [a for a in values["caller"] if a]
        elif fmt.name == "user_unwind_cookie" and same:
            ev.cookie = values["cookie"]
        elif fmt.name == "inode_cache":
            key = values["hash"] if "hash" in values else (values["inode"], values["dev"])
            paths[key] = values["path"]
        elif fmt.name == "user_unwind_stack":
            keys = values["hash"] if "hash" in values else list(zip(values["inodes"], values["dev"]))
            stacks[(buffer, pid, values["cookie"])] = (len(traced), values["stack"], keys)
    for i, ev in enumerate(traced):
        hit = stacks.get((ev.buffer, ev.pid, ev.cookie)) if ev.cookie is not None else None
        if hit is not None:
            written_at, ips, keys = hit
            ev.after = i >= written_at
            ev.user = [(ip, "[anon]" if key in (0, (0, 0)) else paths.get(key, "[unknown]"))
                       for ip, key in zip(ips, keys)]
    return traced


def kernel_name(addr):
    """The KALLSYMS symbol at or below addr."""
    return KALLSYMS[max(a for a in KALLSYMS if a <= addr)]


# -- the scenario the tests use ------------------------------------------------------------------
W, T, O, KW = 100, 101, 200, 50            # workload (tgid 100), its thread 101, other, kworker
COMMS = {W: "workload", T: "worker", O: "other", KW: "kworker/0:1"}
C1 = (5 << 32) | 1                          # cookie = (cnt << 32) | (cpu + 1), cnt odd
C2, C3, C4 = (7 << 32) | 2, (9 << 32) | 2, (11 << 32) | 2
MS = 1_000_000
T0 = 5_000_000_000
EXE, LIBC = (11, (8 << 20) | 1), (12, (8 << 20) | 1)     # (inode, s_dev 8:1)
PATHS = {EXE: "/usr/bin/workload", LIBC: "/usr/lib/x86_64-linux-gnu/libc.so.6"}
STACK_W = [0x1139, 0x27f4a, 0x1ff0, 0x7ffd0000abcd]       # exe, libc, anon, no VMA
INODES_W = [EXE[0], LIBC[0], 0, ULONG_MAX]
DEVS_W = [EXE[1], LIBC[1], 0, 0]

# What the reader must make of it (the tests check these).
EXPECT = {
    "samples": 8, "stitched": 4, "passed": 1,
    "unmatched": {"deferred-lost-after-lost-records": 1, "task-exited": 2},
    "deferred_records": 2, "lost_records": 1, "lost_events": 3,
}


def deferred(path, variant=False, after=False, build=False, instances=()):
    """Two CPUs, four tasks: cookie C1 shared by three events of pid 100 (one after it migrated
    to CPU 1), a kworker event (no cookie), pid 200's stack for C2 lost in 3 missed events then
    C3 stitched, pid 101 exiting before its stack (C4: two events, both task-exited).
    ``after``: one more event of pid 100 in C1's kernel entry after its stack was written (a
    signal delivered on the way out): stitched after its stack (9 events, 5 stitched)."""
    ftrace = [KERNEL_STACK, USER_STACK, USER_UNWIND_COOKIE,
              USER_UNWIND_STACK_HASH if variant else USER_UNWIND_STACK]
    systems = [GETPPID, READ, EXIT, WORK, INODE_CACHE_HASH if variant else INODE_CACHE]
    td = TraceDat(2, ftrace, systems, COMMS, instances)
    _scenario(td, variant=variant, after=after)
    return td if build else td.write(path)


class _Into:
    """td.event/td.drop into one buffer, times shifted."""

    def __init__(self, td, buffer, shift):
        self.td, self.buffer, self.shift = td, buffer, shift

    def event(self, cpu, ts, fmt, common_pid, **values):
        self.td.event(cpu, ts + self.shift, fmt, common_pid, buffer=self.buffer, **values)

    def drop(self, cpu, ts, missed):
        self.td.drop(cpu, ts + self.shift, missed, buffer=self.buffer)


def _scenario(td, variant=False, after=False, buffer=None, shift=0, drop=True, entry=0):
    """deferred()'s events, into ``buffer`` (None: the top one), ``shift`` ns later (``drop``:
    C2's stack lost in missed events on a new page; else just not written); ``entry``: the
    cookies' entry counts advanced by 8 * entry (each round of big() its own kernel entries)."""
    td = _Into(td, buffer, shift)
    C1, C2, C3, C4 = (c + (entry << 35) for c in (globals()["C1"], globals()["C2"],
                                                    globals()["C3"], globals()["C4"]))
    ks_read = [kaddr("ksys_read"), kaddr("do_syscall_64"), kaddr("entry_SYSCALL_64_after_hwframe")]
    ks_ppid = [kaddr("do_syscall_64"), kaddr("entry_SYSCALL_64_after_hwframe")]

    def traced(cpu, ts, fmt, task, cookie, kstack, **values):
        td.event(cpu, ts, fmt, task, **values)
        td.event(cpu, ts, KERNEL_STACK, task, size=len(kstack), caller=kstack)
        if cookie is not None:
            td.event(cpu, ts, USER_UNWIND_COOKIE, task, cookie=cookie)

    # CPU 0
    traced(0, T0, READ, W, C1, ks_read, __syscall_nr=0, fd=3, buf=0x7ffd1000, count=4096)
    traced(0, T0 + 1 * MS, READ, W, C1, ks_read, __syscall_nr=0, fd=3, buf=0x7ffd1000, count=4096)
    traced(0, T0 + 2 * MS, WORK, KW, None, [kaddr("process_one_work"), kaddr("worker_thread")],
           work=0xffff888003a1b000, function=kaddr("ksys_read", 0))
    traced(0, T0 + 3 * MS, GETPPID, O, C2, ks_ppid, __syscall_nr=110)
    # C2's stack and 2 more events are lost on CPU 0
    if drop:
        td.drop(0, T0 + 6 * MS, 3)
    traced(0, T0 + 7 * MS, GETPPID, O, C3, ks_ppid, __syscall_nr=110)
    td.event(0, T0 + 8 * MS, USER_UNWIND_STACK_HASH if variant else USER_UNWIND_STACK, O,
             cookie=C3, stack=[0x1139, 0x27f4a],
             **({"hash": [0xffff8881007ed428, 0xffff8881007ed500]} if variant else
                {"inodes": [EXE[0], LIBC[0]], "dev": [EXE[1], LIBC[1]]}))
    # CPU 1: pid 100 migrated, same kernel entry (C1); then its stack
    traced(1, T0 + 2 * MS + 500, READ, W, C1, ks_read, __syscall_nr=0, fd=3, buf=0x7ffd1000, count=4096)
    if variant:
        td.event(1, T0 + 4 * MS, INODE_CACHE_HASH, W, hash=0xffff8881007ed428, path=PATHS[EXE])
        td.event(1, T0 + 4 * MS, INODE_CACHE_HASH, W, hash=0xffff8881007ed500, path=PATHS[LIBC])
        td.event(1, T0 + 4 * MS + 100, USER_UNWIND_STACK_HASH, W, cookie=C1, stack=STACK_W,
                 hash=[0xffff8881007ed428, 0xffff8881007ed500, 0, ULONG_MAX])
    else:
        for (inode, dev), p in PATHS.items():
            td.event(1, T0 + 4 * MS, INODE_CACHE, W, inode=inode, dev=dev, path=p)
        td.event(1, T0 + 4 * MS + 100, USER_UNWIND_STACK, W, cookie=C1, stack=STACK_W,
                 inodes=INODES_W, dev=DEVS_W)
    if after:
        traced(1, T0 + 4 * MS + 200, GETPPID, W, C1, ks_ppid, __syscall_nr=110)
    # pid 101: two events in one kernel entry, then it exits (its own exit event shares C4)
    traced(1, T0 + 5 * MS, READ, T, C4, ks_read, __syscall_nr=0, fd=4, buf=0x7ffd2000, count=64)
    traced(1, T0 + 5 * MS + 200, EXIT, T, C4, [kaddr("do_exit")], comm="worker", pid=T, prio=120)


def big(path, mib):
    """deferred()'s scenario over and over, 10 ms apart, until the file holds about ``mib`` MiB
    of ring buffer (about 75 bytes an event, as a real deferred-stack trace; events lost once in
    a hundred rounds): the trace of the benchmarks (bench/run.py)."""
    ftrace = [KERNEL_STACK, USER_STACK, USER_UNWIND_COOKIE, USER_UNWIND_STACK]
    td = TraceDat(2, ftrace, [GETPPID, READ, EXIT, WORK, INODE_CACHE], COMMS)
    rounds = int(mib * (1 << 20) / 1520)
    for i in range(rounds):
        _scenario(td, shift=i * 10 * MS, drop=i % 100 == 99, entry=i)
    return td.write(path)



# -- varied(): a trace shaped like a real deferred-stack recording (the bench's) ------------------
WRITE = _fmt("syscalls", "sys_enter_write", 651, READ.fields, READ.print_fmt.replace("buf", "buf"))
FUTEX = _fmt("syscalls", "sys_enter_futex", 240,
             [("int", "__syscall_nr", 8, 4, 1), ("u32 *", "uaddr", 16, 8, 0), ("int", "op", 24, 8, 0),
              ("u32", "val", 32, 8, 0)],
             '"uaddr: 0x%08lx, op: 0x%08lx, val: 0x%08lx", ((unsigned long)(REC->uaddr)), '
             '((unsigned long)(REC->op)), ((unsigned long)(REC->val))')
VARIED_SEED = 20250817
_WORDS = ("alloc free read write page cache inode file lock unlock sched task irq timer mm vma "
          "fault map unmap sock tcp udp skb net dev queue work rcu cpu mutex spin wake wait poll "
          "event buf block bio req ext4 xfs nfs kvm pci acpi usb hid input drm fb tty serial "
          "folio lru shrink slab kmem dentry mount path name open close flush sync pipe signal "
          "futex epoll ring entry exit init probe remove attach detach update insert lookup find "
          "get put start stop submit complete handle notify commit prepare reserve charge "
          "account stat attr xattr perm cred seccomp bpf prog trace ftrace kprobe uprobe "
          "unwind stack frame copy user iter splice pid ns cgroup css memcg swap zone node").split()
_PREFIXES = ("", "", "", "", "__", "do_", "__do_", "ksys_", "vfs_", "generic_", "__x64_sys_",
             "security_", "ext4_", "tcp_", "__se_", "___")
_MODULES = ("kvm", "kvm_intel", "ext4", "xfs", "nf_tables", "bridge", "virtio_net", "btrfs")


def varied_kallsyms(nsyms, seed=VARIED_SEED):
    """[(addr, type, name, module or None)] of a made-up kernel of about ``nsyms`` symbols
    (/proc/kallsyms of a distribution kernel holds ~200 000: __pfx_ padding symbols, text,
    rodata, data, bss, then the modules'), sorted by address, and {function address: size}."""
    rnd = random.Random(seed)
    fixed = ["_stext", "entry_SYSCALL_64", "entry_SYSCALL_64_after_hwframe", "do_syscall_64",
             "x64_sys_call", "syscall_exit_to_user_mode", "ret_from_fork", "ret_from_fork_asm",
             "kthread", "worker_thread", "process_one_work", "asm_sysvec_apic_timer_interrupt",
             "unwind_deferred_request", "unwind_deferred_task_work", "task_work_run"]
    out, funcs, seen = [], {}, set(fixed)
    addr = 0xffffffff81000000
    mod_at = int(nsyms * 0.95)
    while len(out) < nsyms:
        if fixed:
            name = fixed.pop(0)
            kind = "T"
        else:
            name = rnd.choice(_PREFIXES) + "_".join(rnd.sample(_WORDS, rnd.choice((1, 2, 2, 3, 3, 4))))
            if name in seen:
                name += "_%d" % rnd.randrange(1, 64)
                if name in seen:
                    name += ".cold" if rnd.random() < 0.5 else ".isra.0"
                    if name in seen:
                        continue
            seen.add(name)
            kind = rnd.choices("TtrdbD", weights=(34, 38, 14, 9, 3, 2))[0]
        module = None
        if len(out) >= mod_at:
            if len(out) == mod_at:
                addr = 0xffffffffc0000000
            module = _MODULES[(len(out) - mod_at) * len(_MODULES) // (nsyms - mod_at)]
            kind = kind.lower()
        if kind in "Tt" and len(out) + 1 < nsyms and rnd.random() < 0.8:
            out.append((addr, kind, "__pfx_" + name, module))
            addr += 16
        out.append((addr, kind, name, module))
        size = 16 * rnd.choice((1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64))
        if kind in "Tt":
            funcs[addr] = size
        addr += size
    return out, funcs


def kallsyms_text(syms):
    return "".join("%016x %s %s%s\n" % (a, k, n, "\t[%s]" % m if m else "")
                   for a, k, n, m in syms).encode()


def varied(path, mib, nsyms=200_000, seed=VARIED_SEED, kinds=300, skew=0.9):
    """A trace shaped like a real deferred-stack recording, for the benchmarks: 4 CPUs, ~40
    processes of 1-16 threads (a thread now and then exits and a new pid takes its place), a few
    kworkers; ~850 distinct stitched stacks (kernel stacks 4-16 deep, user stacks 4-16 deep over
    each process's executable and a dozen shared libraries, some anonymous frames), most frequent
    first (Zipf); 1-3 traced syscalls per kernel entry, each followed by its kernel_stack and
    cookie, the entry's user_unwind_stack written when the task returns to user space (after
    other tasks ran on that CPU, on another CPU now and then), every file named by inode_cache
    first; events lost now and then (the stacks pending on that CPU with them);
    a kallsyms of ``nsyms`` made-up symbols (varied_kallsyms). 75-85 bytes an event (pages
    included: 165 855 events at 13.5 MiB) over
    ``mib`` MiB of ring buffer; ``kinds`` kernel stacks to pair with user stacks, the stacks'
    frequencies 1/rank**``skew``. Seeded: the same bytes every time."""
    rnd = random.Random(seed)
    syms, sizes = varied_kallsyms(nsyms, seed)
    funcs = list(sizes)
    addr_of = {n: a for a, _k, n, _m in syms}
    ncpu = 4
    # processes: an executable and libraries; each library one (inode, dev) in inode_cache
    libs = ["/usr/lib/x86_64-linux-gnu/%s" % n for n in (
        "libc.so.6", "libm.so.6", "libstdc++.so.6.0.30", "libgcc_s.so.1", "libz.so.1.2.13",
        "libssl.so.3", "libcrypto.so.3", "libpython3.11.so.1.0", "libglib-2.0.so.0.7400.6",
        "libsqlite3.so.0.8.6", "libffi.so.8.1.2", "libzstd.so.1.5.4")] + ["/usr/lib64/ld-linux-x86-64.so.2"]
    dev = (8 << 20) | 1
    files = {p: (1000 + i, dev) for i, p in enumerate(libs)}
    procs, tgid = [], 2000
    for i in range(40):
        exe = "/usr/bin/%s" % "-".join(rnd.sample(_WORDS, 2))
        files[exe] = (5000 + i, dev)
        nthreads = rnd.choice((1, 1, 2, 4, 4, 8, 8, 12, 16))
        tids = [tgid + k for k in range(nthreads)]
        procs.append({"exe": exe, "libs": [libs[0], libs[-1]] + rnd.sample(libs[1:-1], rnd.randint(1, 6)),
                      "tids": tids, "comm": exe.rsplit("/", 1)[1][:15]})
        tgid += 32
    comms = {}
    for p in procs:
        for t in p["tids"]:
            comms[t] = p["comm"]
    kworkers = [40 + k for k in range(8)]
    for k, t in enumerate(kworkers):
        comms[t] = "kworker/%d:%d" % (k % ncpu, k // ncpu)
    base = {p: 0x555555554000 if p.startswith("/usr/bin") else 0x7f0000000000 + (i << 24)
            for i, p in enumerate(files)}
    # kernel stacks, innermost first: a syscall's chain over the entry frames, then callees
    entry = [addr_of["do_syscall_64"], addr_of["entry_SYSCALL_64_after_hwframe"]]
    chains = [[rnd.choice(funcs) for _ in range(rnd.randint(2, 5))] for _ in range(40)]

    def ret(a):
        return a + rnd.randrange(1, sizes[a])       # a return address inside the function

    kstacks = []
    for _ in range(kinds):
        chain = rnd.choice(chains)
        depth = rnd.randint(4, 16)
        leaf = [rnd.choice(funcs) for _ in range(max(0, depth - len(chain) - 3))]
        kstacks.append([ret(a) for a in leaf + chain + [addr_of["x64_sys_call"]]] +
                       [ret(a) for a in entry])
    kwork = [[ret(rnd.choice(funcs)) for _ in range(rnd.randint(2, 8))] +
             [ret(addr_of[n]) for n in ("process_one_work", "worker_thread", "kthread",
                                        "ret_from_fork", "ret_from_fork_asm")] for _ in range(30)]
    # user stacks, outermost first as built, written innermost first: _start, main, ...
    ustacks = []
    for _ in range(600):
        p = rnd.choice(procs)
        frames = [(p["exe"], 0x1040), (p["libs"][0], 0x27200), (p["exe"], 0x1900)]
        for _ in range(rnd.randint(0, 12)):
            r = rnd.random()
            f = p["exe"] if r < 0.4 else (None if r < 0.43 else rnd.choice(p["libs"]))
            frames.append((f, rnd.randrange(0x1000, 0x200000)))
        frames.append((p["libs"][0], rnd.randrange(0x90000, 0x120000)))     # the syscall wrapper
        frames.reverse()
        ips, inodes, devs = [], [], []
        for f, off in frames:
            if f is None:                   # anonymous (a JIT): inode 0
                ips.append(0x7f5500000000 + off)
                inodes.append(0)
                devs.append(0)
            else:
                ips.append(base[f] + off)
                inodes.append(files[f][0])
                devs.append(files[f][1])
        payload = pack_event(USER_UNWIND_STACK, 0, {"cookie": 0, "stack": ips, "inodes": inodes,
                                                   "dev": devs})
        ustacks.append((p, payload))
    shapes = []
    while len(shapes) < min(max(850, kinds), kinds * len(ustacks)):
        pair = (rnd.randrange(len(kstacks)), rnd.randrange(len(ustacks)))
        if pair not in shapes:
            shapes.append(pair)
    weights = [1 / (i + 1) ** skew for i in range(len(shapes))]
    kpay = [struct.pack("<I4x", len(k)) + b"".join(struct.pack("<Q", a) for a in k)
            for k in kstacks + kwork]

    td = TraceDat(ncpu, [KERNEL_STACK, USER_STACK, USER_UNWIND_COOKIE, USER_UNWIND_STACK],
                  [GETPPID, READ, WRITE, FUTEX, EXIT, WORK, INODE_CACHE], comms, keep=False,
                  kallsyms=kallsyms_text(syms))
    now = [T0] * ncpu
    count = [0] * ncpu
    pending = [{} for _ in range(ncpu)]     # per CPU: tid -> (due ts, cookie, ustack)
    where = {}                              # tid -> the CPU its stack is pending on
    next_pid = tgid

    def kernel(cpu, ts, pid, k):
        td.raw(cpu, ts, struct.pack("<HBBi", KERNEL_STACK.id, 0, 0, pid) + kpay[k])

    def stack(cpu, ts, tid):
        ts = now[cpu] = max(ts, now[cpu])      # in time order on its CPU
        _due, cookie, u = pending[cpu].pop(tid)
        del where[tid]
        rec = bytearray(ustacks[u][1])
        struct.pack_into("<HBBiQ", rec, 0, USER_UNWIND_STACK.id, 0, 0, tid, cookie)
        td.raw(cpu, ts, bytes(rec))

    for f, (inode, dev_) in files.items():     # each file named once, before any stack
        td.raw(0, T0, pack_event(INODE_CACHE, kworkers[0], {"inode": inode, "dev": dev_, "path": f}))
    limit = mib * (1 << 20)
    step = 0
    while True:
        if step % 512 == 0 and sum(len(c.pages) for c in td.cpus) * PAGE >= limit:
            break
        step += 1
        cpu = min(range(ncpu), key=now.__getitem__)       # the CPUs' clocks go together
        ts = now[cpu] + rnd.randint(2_000, 60_000)
        for tid, (due, _c, _u) in sorted(pending[cpu].items(), key=lambda kv: kv[1][0]):
            if due <= ts:
                stack(cpu, due, tid)
        now[cpu] = ts
        r = rnd.random()
        if r < 0.003:                       # events lost: the stacks pending here with them
            td.drop(cpu, ts, rnd.randint(1, 64))
            for tid in list(pending[cpu]):
                del pending[cpu][tid]
                del where[tid]
            continue
        if r < 0.1:                         # a kworker's work: no user stack
            pid = rnd.choice(kworkers)
            td.raw(cpu, ts, struct.pack("<HBBiQQ", WORK.id, 0, 0, pid, 0xffff888003a1b000 +
                                        rnd.randrange(1 << 16) * 64, rnd.choice(funcs)))
            kernel(cpu, ts, pid, len(kstacks) + rnd.randrange(len(kwork)))
            continue
        k, u = shapes[rnd.choices(range(len(shapes)), weights)[0]] if step % 64 else \
            shapes[rnd.randrange(len(shapes))]
        p = ustacks[u][0]
        tid = rnd.choice(p["tids"])
        if tid in where:                    # its last entry's stack first (it went back to user)
            x = where[tid]
            stack(x, ts, tid)
            ts = now[cpu] = max(ts, now[x]) + 1       # the new entry after it
        if r < 0.1004:                      # the thread exits; a new one takes its place
            td.raw(cpu, ts, struct.pack("<HBBi16sii", EXIT.id, 0, 0, tid, p["comm"].encode(),
                                        tid, 120))
            p["tids"][p["tids"].index(tid)] = next_pid
            comms[next_pid] = p["comm"]
            next_pid += 1
            continue
        count[cpu] += 1
        cookie = ((2 * count[cpu] + 1) << 32) | (cpu + 1)
        t = ts
        for i in range(rnd.choice((1, 1, 1, 2, 2, 3))):
            t += i and rnd.randint(500, 3000)
            fmt = rnd.choice((READ, READ, WRITE, FUTEX, GETPPID))
            if fmt is GETPPID:
                ev = struct.pack("<HBBii4x", fmt.id, 0, 0, tid, 110)
            else:
                ev = struct.pack("<HBBii4xQQQ", fmt.id, 0, 0, tid, 0, rnd.randrange(3, 64),
                                 0x7ffd10000000 + rnd.randrange(1 << 20) * 16, 4096)
            td.raw(cpu, t, ev)
            kernel(cpu, t, tid, k)
            td.raw(cpu, t, struct.pack("<HBBiQ", USER_UNWIND_COOKIE.id, 0, 0, tid, cookie))
            now[cpu] = t
        scpu = cpu if rnd.random() < 0.9 else rnd.randrange(ncpu)     # migrated on the way out
        pending[scpu][tid] = (now[cpu] + rnd.randint(5_000, 400_000), cookie, u)
        where[tid] = scpu
    for cpu in range(ncpu):
        for tid, (due, _c, _u) in sorted(pending[cpu].items(), key=lambda kv: kv[1][0]):
            stack(cpu, due, tid)
    return td.write(path)


def userstack(path):
    """Today's kernels: traced events followed by the synchronous ftrace:user_stack."""
    td = TraceDat(2, [KERNEL_STACK, USER_STACK], [GETPPID, WORK], COMMS)
    for i in range(3):
        ts = T0 + i * MS
        td.event(i % 2, ts, GETPPID, W, __syscall_nr=110)
        td.event(i % 2, ts, USER_STACK, W, tgid=W, caller=[0x7f0000001000 + i, 0x555500001139, 0])
    td.event(0, T0 + 5 * MS, WORK, KW, work=1, function=kaddr("ksys_read", 0))
    return td.write(path)


def instances(path, build=False):
    """The deferred scenario in the top buffer and again, shifted, in instance "inst": the same
    tasks and cookies in both (the kernel gives one cookie per kernel entry, whatever the
    instance; each instance requests and writes its own stacks). Plus instance "lossy": an event
    of pid 100 with cookie C1 whose stack is not in that buffer: the top buffer's stack for C1
    must not serve it (stream-ended).
    Each buffer's expected counts: INSTANCES_EXPECT."""
    td = deferred(None, build=True, instances=("inst", "lossy"))
    _scenario(td, buffer="inst", shift=50 * MS)
    ks = [kaddr("do_syscall_64"), kaddr("entry_SYSCALL_64_after_hwframe")]
    td.event(0, T0 + 100, GETPPID, W, buffer="lossy", __syscall_nr=110)
    td.event(0, T0 + 100, KERNEL_STACK, W, buffer="lossy", size=len(ks), caller=ks)
    td.event(0, T0 + 100, USER_UNWIND_COOKIE, W, buffer="lossy", cookie=C1)
    return td if build else td.write(path)


INSTANCES_EXPECT = {
    "top": {"samples": 8, "stitched": 4, "passed": 1,
            "unmatched": {"deferred-lost-after-lost-records": 1, "task-exited": 2}},
    "inst": {"samples": 8, "stitched": 4, "passed": 1,
             "unmatched": {"deferred-lost-after-lost-records": 1, "task-exited": 2}},
    "lossy": {"samples": 1, "stitched": 0, "passed": 0, "unmatched": {"stream-ended": 1}},
}


# -- missed events on one CPU, cookies pending on two (reader.py's per-CPU loss windows) ---------
A, B, C = 300, 301, 302
CA1, CA2 = (13 << 32) | 1, (15 << 32) | 1
CB1, CB2 = (17 << 32) | 2, (19 << 32) | 2
CC1, CC2 = (21 << 32) | 1, (23 << 32) | 1
MISSED_REASONS = {          # the cookie whose stack never came -> its reason
    CA1: "deferred-lost-after-lost-records",   # its entry (0-5 ms) spans CPU 1's loss (2.5-4 ms)
    CB1: "deferred-lost",                      # its entry (1-2 ms) ended before that loss
    CC1: "deferred-lost-after-lost-records",   # its entry (8-9 ms) spans CPU 1's second loss
}                                              # (7-12 ms), read only after C's next stack


def missed_per_cpu(path):
    """Two CPUs; events are lost twice on CPU 1 only. Task A (cookie on CPU 0), B (on CPU 1) and
    C (on CPU 0) each lose the stack of their first kernel entry, then get their second entry's
    stack. A stack is written wherever its task returns to user space, so only time tells
    which losses could have taken it: MISSED_REASONS. Nine events: 3 stitched, 3 passed."""
    td = TraceDat(2, [USER_UNWIND_COOKIE, USER_UNWIND_STACK], [GETPPID, WORK],
                  {**COMMS, A: "task_a", B: "task_b", C: "task_c"})

    def traced(cpu, ts, task, cookie):
        td.event(cpu, ts, GETPPID, task, __syscall_nr=110)
        td.event(cpu, ts, USER_UNWIND_COOKIE, task, cookie=cookie)

    def stack(cpu, ts, task, cookie):
        td.event(cpu, ts, USER_UNWIND_STACK, task, cookie=cookie, stack=[0x1139], inodes=[0], dev=[0])

    traced(0, T0, A, CA1)
    traced(1, T0 + 1 * MS, B, CB1)
    traced(1, T0 + 2 * MS, B, CB2)
    td.event(1, T0 + 2 * MS + MS // 2, WORK, KW, work=1, function=kaddr("ksys_read", 0))
    td.drop(1, T0 + 4 * MS, 4)
    td.event(1, T0 + 4 * MS, WORK, KW, work=2, function=kaddr("ksys_read", 0))
    traced(0, T0 + 5 * MS, A, CA2)
    stack(0, T0 + 6 * MS, A, CA2)
    stack(1, T0 + 7 * MS, B, CB2)
    traced(0, T0 + 8 * MS, C, CC1)
    traced(0, T0 + 9 * MS, C, CC2)
    stack(0, T0 + 10 * MS, C, CC2)
    td.drop(1, T0 + 12 * MS, 2)
    td.event(1, T0 + 12 * MS, WORK, KW, work=3, function=kaddr("ksys_read", 0))
    return td.write(path)


if __name__ == "__main__":
    kind = sys.argv[2] if len(sys.argv) > 2 else "deferred"
    {"deferred": deferred, "variant": lambda p: deferred(p, True), "userstack": userstack,
     "instances": instances, "missed": missed_per_cpu,
     "big": lambda p: big(p, float(sys.argv[3]) if len(sys.argv) > 3 else 13.5),
     "varied": lambda p: varied(p, float(sys.argv[3]) if len(sys.argv) > 3 else 13.5,
                                *map(int, sys.argv[4:5]))}[kind](sys.argv[1])
