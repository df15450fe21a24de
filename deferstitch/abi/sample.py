"""PERF_RECORD_SAMPLE and the sample_id trailer, laid out from one attr's sample_type.

    struct {                          /* PERF_RECORD_SAMPLE, fields present iff their bit is set */
      struct perf_event_header header;
      u64 id;          /* IDENTIFIER */     u64 ip;        /* IP */
      u32 pid, tid;    /* TID */            u64 time;      /* TIME */
      u64 addr;        /* ADDR */           u64 id;        /* ID */
      u64 stream_id;   /* STREAM_ID */      u32 cpu, res;  /* CPU */
      u64 period;      /* PERIOD */         struct read_format values; /* READ */
      u64 nr; u64 ips[nr];                  /* CALLCHAIN */
      u32 size; char data[size];            /* RAW (u32 + data padded to 8) */
      u64 nr; [u64 hw_idx;] {u64 from, to, flags}[nr]; [u64 cntr[nr]];  /* BRANCH_STACK */
      u64 abi; u64 regs[weight(mask)];      /* REGS_USER (regs only if abi) */
      u64 size; char data[size]; u64 dyn_size;  /* STACK_USER (data, dyn_size only if size) */
      u64 weight;      /* WEIGHT or WEIGHT_STRUCT */  u64 data_src; u64 transaction;
      u64 abi; u64 regs[weight(mask)];      /* REGS_INTR */
      u64 phys_addr; u64 cgroup; u64 data_page_size; u64 code_page_size;
      u64 size; char data[size];            /* AUX */
    };

Everything up to READ has a fixed size, so the callchain's position is known from the attr alone
(unless READ is a group): the stitcher's hot path reads tid, time and the chain at fixed offsets.

    struct read_format {                       /* PERF_SAMPLE_READ, laid out by attr.read_format */
      { u64 value; u64 time_enabled; /* TOTAL_TIME_ENABLED */ u64 time_running; /* ..._RUNNING */
        u64 id; /* ID */ u64 lost; /* LOST, Linux 6.0 */ }                && !PERF_FORMAT_GROUP
      { u64 nr; u64 time_enabled; u64 time_running;
        { u64 value; u64 id; u64 lost; } cntr[nr]; }                       && PERF_FORMAT_GROUP
    };
    struct perf_branch_stack {                 /* PERF_SAMPLE_BRANCH_STACK, by attr.branch_sample_type */
      u64 nr; u64 hw_idx;  /* BRANCH_HW_INDEX, Linux 5.7 */
      struct perf_branch_entry { u64 from, to, flags; } entries[nr];
      u64 cntr[nr];        /* BRANCH_COUNTERS, Linux 6.8 */
    };
"""
import struct
from collections import namedtuple

from . import consts as C


# Callchain decoders by length, shared by every layout of one endianness (at most one per
# distinct nr: nr is bounded by the 64 KiB record size).
_CHAINS = {}


# PERF_SAMPLE_READ decoded: ``values`` is ((value, id, lost), ...), one triple for a single
# counter, one per member for a group; a field the read_format leaves out is None.
SampleRead = namedtuple("SampleRead", "group time_enabled time_running values")

# PERF_SAMPLE_BRANCH_STACK decoded: ``entries`` is ((from, to, flags), ...), newest branch first;
# ``hw_idx`` is None unless the attr asked for PERF_SAMPLE_BRANCH_HW_INDEX.
BranchStack = namedtuple("BranchStack", "hw_idx entries")


def _popcount(x):
    return bin(x).count("1")


def split_chain(chain):
    """(kernel part, cookie, layout) of a callchain. A deferred chain ends
    ``PERF_CONTEXT_USER_DEFERRED, cookie`` (layout "cookie", Linux 6.19) or, before the cookie
    patch, the marker alone (layout "no-cookie", cookie None); any other chain gives
    (chain, None, None). A cookie is never a marker, so the two cannot be confused."""
    if len(chain) >= 2 and chain[-2] == C.PERF_CONTEXT_USER_DEFERRED:
        return chain[:-2], chain[-1], C.DEFERRED_COOKIE
    if chain and chain[-1] == C.PERF_CONTEXT_USER_DEFERRED:
        return chain[:-1], None, C.DEFERRED_NO_COOKIE
    return chain, None, None


class PerfSample:
    """The decoded fields of one sample. ``callchain_offset`` is where ``u64 nr`` sits in the
    record and ``callchain_end`` where the chain ends, so that a writer can splice a new chain."""

    __slots__ = ("identifier", "ip", "pid", "tid", "time", "addr", "id", "stream_id", "cpu",
                 "period", "read", "callchain", "callchain_offset", "callchain_end", "raw",
                 "branch_stack")

    def __init__(self):
        self.identifier = self.ip = self.pid = self.tid = self.time = self.addr = None
        self.id = self.stream_id = self.cpu = self.period = self.read = self.raw = None
        self.branch_stack = None
        self.callchain = None
        self.callchain_offset = self.callchain_end = None


FIXED_AND_CHAIN = (C.PERF_SAMPLE_IDENTIFIER | C.PERF_SAMPLE_IP | C.PERF_SAMPLE_TID | C.PERF_SAMPLE_TIME
                    | C.PERF_SAMPLE_ADDR | C.PERF_SAMPLE_ID | C.PERF_SAMPLE_STREAM_ID | C.PERF_SAMPLE_CPU
                    | C.PERF_SAMPLE_PERIOD | C.PERF_SAMPLE_READ | C.PERF_SAMPLE_CALLCHAIN)


class SampleLayout:
    """Where each field of a sample and of the sample_id trailer sits, for one attr."""

    def __init__(self, attr):
        e = attr.endian
        st = self.sample_type = attr.sample_type
        self.attr = attr
        self.endian = e
        self.read_format = attr.read_format
        self.branch_sample_type = attr.branch_sample_type
        self.regs_user_n = _popcount(attr.sample_regs_user)
        self.regs_intr_n = _popcount(attr.sample_regs_intr)
        self.u64 = struct.Struct(e + "Q")
        self.u32 = struct.Struct(e + "I")
        # The fixed prefix: (slot names, struct codes), IDENTIFIER..PERIOD in uapi order.
        names, codes = [], ""
        for bit, fields, code in (
                (C.PERF_SAMPLE_IDENTIFIER, ("identifier",), "Q"), (C.PERF_SAMPLE_IP, ("ip",), "Q"),
                (C.PERF_SAMPLE_TID, ("pid", "tid"), "ii"), (C.PERF_SAMPLE_TIME, ("time",), "Q"),
                (C.PERF_SAMPLE_ADDR, ("addr",), "Q"), (C.PERF_SAMPLE_ID, ("id",), "Q"),
                (C.PERF_SAMPLE_STREAM_ID, ("stream_id",), "Q"), (C.PERF_SAMPLE_CPU, ("cpu", None), "II"),
                (C.PERF_SAMPLE_PERIOD, ("period",), "Q")):
            if st & bit:
                names.extend(fields)
                codes += code
        self.prefix_names = names
        self.prefix = struct.Struct(e + codes)
        self.prefix_end = 8 + self.prefix.size
        self.time_offset = self.prefix_offset(names, "time")
        self.tid_offset = self.prefix_offset(names, "pid")
        self.id_offset = self.prefix_offset(names, "identifier")
        if self.id_offset is None:
            self.id_offset = self.prefix_offset(names, "id")
        rf = attr.read_format
        self.read_group = bool(st & C.PERF_SAMPLE_READ and rf & C.PERF_FORMAT_GROUP)
        per_value = 1 + bool(rf & C.PERF_FORMAT_ID) + bool(rf & C.PERF_FORMAT_LOST)
        times = bool(rf & C.PERF_FORMAT_TOTAL_TIME_ENABLED) + bool(rf & C.PERF_FORMAT_TOTAL_TIME_RUNNING)
        self.read_words = (1 + times, per_value) if self.read_group else (per_value + times, 0)
        if st & C.PERF_SAMPLE_READ and not self.read_group:
            self.callchain_offset = self.prefix_end + 8 * self.read_words[0]
        elif st & C.PERF_SAMPLE_READ:
            self.callchain_offset = None          # after a group read: variable
        else:
            self.callchain_offset = self.prefix_end
        self.has_callchain = bool(st & C.PERF_SAMPLE_CALLCHAIN)
        # --call-graph lbr: perf rebuilds the user part of the chain from the branch stack
        self.lbr_callstack = bool(st & C.PERF_SAMPLE_BRANCH_STACK
                                  and attr.branch_sample_type & C.PERF_SAMPLE_BRANCH_CALL_STACK)
        # sample_id trailer of non-sample records: TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER.
        tnames, tcodes = [], ""
        for bit, fields, code in (
                (C.PERF_SAMPLE_TID, ("pid", "tid"), "ii"), (C.PERF_SAMPLE_TIME, ("time",), "Q"),
                (C.PERF_SAMPLE_ID, ("id",), "Q"), (C.PERF_SAMPLE_STREAM_ID, ("stream_id",), "Q"),
                (C.PERF_SAMPLE_CPU, ("cpu", None), "II"), (C.PERF_SAMPLE_IDENTIFIER, ("identifier",), "Q")):
            if st & bit:
                tnames.extend(fields)
                tcodes += code
        self.trailer_names = tnames
        self.trailer = struct.Struct(e + tcodes) if attr.sample_id_all else struct.Struct(e)
        if not attr.sample_id_all:
            self.trailer_names = []
        # Offsets from the END of the record, for the sorter's and the id lookup's quick reads.
        self.trailer_time_from_end = self._trailer_from_end("time")
        self.trailer_tid_from_end = self._trailer_from_end("pid")
        self.trailer_id_from_end = self._trailer_from_end("identifier") or self._trailer_from_end("id")
        self._parse = self._compile()

    @staticmethod
    def _slot_offset(names, name):
        """Byte offset of ``name`` in a run of u64 slots (pid/tid and cpu/res share one)."""
        if name not in names:
            return None
        off, i = 0, 0
        while names[i] != name:
            i += 2 if names[i] in ("pid", "cpu") else 1
            off += 8
        return off

    def prefix_offset(self, names, name):
        off = self._slot_offset(names, name)
        return None if off is None else 8 + off

    def _trailer_from_end(self, name):
        off = self._slot_offset(self.trailer_names, name)
        return None if off is None else self.trailer.size - off

    # -- decoding -------------------------------------------------------------------------------
    def time_of_trailer(self, data):
        if self.trailer_time_from_end is None or len(data) - 8 < self.trailer.size:
            return None
        return self.u64.unpack_from(data, len(data) - self.trailer_time_from_end)[0]

    def parse(self, data, where=None):
        """Decode a whole PERF_RECORD_SAMPLE; raise ValueError when the fields overrun the record."""
        return self._parse(data)

    def _compile(self):
        """parse() specialised to this layout: the fixed prefix unpacked straight into the slots,
        the callchain through a cached Struct per length. The hot path of every command; a
        layout with PERF_SAMPLE_READ uses the generic walk (same results, same errors)."""
        st = self.sample_type
        if st & C.PERF_SAMPLE_READ:
            return self._parse_generic
        names = [n for n in self.prefix_names]
        targets = ", ".join(("s." + n) if n else "_" for n in names)
        src = ["def parse(data, where=None):",
               "    size = len(data)",
               "    if %d > size:" % self.prefix_end,
               "        raise ValueError('sample of %%d bytes is shorter than its fixed fields (%d)' %% size)"
               % self.prefix_end,
               "    s = new(PerfSample)"]
        for slot in PerfSample.__slots__:
            if slot not in names:
                src.append("    s.%s = None" % slot)
        if names:
            src.append("    %s, = unpack_prefix(data, 8)" % targets)
        src.append("    off = %d" % self.prefix_end)
        if st & C.PERF_SAMPLE_CALLCHAIN:
            src += ["    if off + 8 > size:",
                    "        raise ValueError('callchain nr overruns the sample')",
                    "    nr = u64(data, off)[0]",
                    "    if nr > (size - off - 8) // 8:",
                    "        raise ValueError('callchain nr=%d exceeds record size %d' % (nr, size))",
                    "    s.callchain_offset = off",
                    "    chain = chains.get(nr)",
                    "    if chain is None:",
                    "        chain = chains[nr] = Struct(endian + '%dQ' % nr).unpack_from",
                    "    s.callchain = chain(data, off + 8)",
                    "    off += 8 + 8 * nr",
                    "    s.callchain_end = off"]
        if st & ~FIXED_AND_CHAIN:
            src.append("    off = skip_tail(data, off, s)")
        src += ["    if off > size:",
                "        raise ValueError('sample fields end at %d, past the record size %d' % (off, size))",
                "    return s"]
        env = {"new": object.__new__, "PerfSample": PerfSample, "unpack_prefix": self.prefix.unpack_from,
               "u64": self.u64.unpack_from, "chains": _CHAINS.setdefault(self.endian, {}),
               "Struct": struct.Struct, "endian": self.endian, "skip_tail": self._skip_tail}
        exec(compile("\n".join(src), "<SampleLayout.parse %#x>" % st, "exec"), env)
        return env["parse"]

    def _parse_generic(self, data, where=None):
        """parse() for every layout (the compiled one covers the common ones)."""
        s = PerfSample()
        size = len(data)
        if self.prefix_end > size:
            raise ValueError("sample of %d bytes is shorter than its fixed fields (%d)"
                             % (size, self.prefix_end))
        for name, value in zip(self.prefix_names, self.prefix.unpack_from(data, 8)):
            if name:
                setattr(s, name, value)
        off = self.prefix_end
        st = self.sample_type
        u64 = self.u64
        if st & C.PERF_SAMPLE_READ:
            if self.read_group:
                if off + 8 > size:
                    raise ValueError("read group overruns the sample")
                nr = u64.unpack_from(data, off)[0]
                words = self.read_words[0] + nr * self.read_words[1]
            else:
                words = self.read_words[0]
            if off + 8 * words > size:
                raise ValueError("read values overrun the sample")
            s.read = self._read(struct.unpack_from(self.endian + "%dQ" % words, data, off))
            off += 8 * words
        if st & C.PERF_SAMPLE_CALLCHAIN:
            if off + 8 > size:
                raise ValueError("callchain nr overruns the sample")
            nr = u64.unpack_from(data, off)[0]
            if nr > (size - off - 8) // 8:
                raise ValueError("callchain nr=%d exceeds record size %d" % (nr, size))
            s.callchain_offset = off
            s.callchain = struct.unpack_from(self.endian + "%dQ" % nr, data, off + 8)
            off += 8 + 8 * nr
            s.callchain_end = off
        if st & ~(C.PERF_SAMPLE_IDENTIFIER | C.PERF_SAMPLE_IP | C.PERF_SAMPLE_TID | C.PERF_SAMPLE_TIME
                  | C.PERF_SAMPLE_ADDR | C.PERF_SAMPLE_ID | C.PERF_SAMPLE_STREAM_ID | C.PERF_SAMPLE_CPU
                  | C.PERF_SAMPLE_PERIOD | C.PERF_SAMPLE_READ | C.PERF_SAMPLE_CALLCHAIN):
            off = self._skip_tail(data, off, s)
        if off > size:
            raise ValueError("sample fields end at %d, past the record size %d" % (off, size))
        return s

    def _read(self, words):
        """SampleRead from the u64 words of a read_format (their count already checked)."""
        rf = self.read_format
        has_id, has_lost = bool(rf & C.PERF_FORMAT_ID), bool(rf & C.PERF_FORMAT_LOST)
        pos, enabled, running = 1, None, None        # words[0]: the value, or the group's nr
        if rf & C.PERF_FORMAT_TOTAL_TIME_ENABLED:
            enabled, pos = words[pos], pos + 1
        if rf & C.PERF_FORMAT_TOTAL_TIME_RUNNING:
            running, pos = words[pos], pos + 1
        if not self.read_group:
            return SampleRead(False, enabled, running, ((
                words[0], words[pos] if has_id else None, words[pos + has_id] if has_lost else None),))
        step = 1 + has_id + has_lost
        return SampleRead(True, enabled, running, tuple(
            (words[at], words[at + 1] if has_id else None, words[at + 1 + has_id] if has_lost else None)
            for at in range(pos, pos + step * words[0], step)))

    def _skip_tail(self, data, off, s):
        """Walk RAW .. AUX: RAW is kept, the rest is only measured (skipped exactly)."""
        st, size, u64 = self.sample_type, len(data), self.u64

        def word(at):
            if at + 8 > size:
                raise ValueError("sample field at %d overruns the record size %d" % (at, size))
            return u64.unpack_from(data, at)[0]

        if st & C.PERF_SAMPLE_RAW:
            if off + 4 > size:
                raise ValueError("raw size overruns the sample")
            n = self.u32.unpack_from(data, off)[0]
            s.raw = bytes(data[off + 4:off + 4 + n])
            off += (4 + n + 7) & ~7
        if st & C.PERF_SAMPLE_BRANCH_STACK:
            nr = word(off)
            off += 8
            hw_idx = None
            if self.branch_sample_type & C.PERF_SAMPLE_BRANCH_HW_INDEX:
                hw_idx = word(off)
                off += 8
            if nr > (size - off) // 24:
                raise ValueError("branch stack nr=%d exceeds record size %d" % (nr, size))
            flat = struct.unpack_from(self.endian + "%dQ" % (3 * nr), data, off)
            s.branch_stack = BranchStack(hw_idx, tuple(zip(flat[0::3], flat[1::3], flat[2::3])))
            off += 24 * nr
            if self.branch_sample_type & C.PERF_SAMPLE_BRANCH_COUNTERS:
                off += 8 * nr
        if st & C.PERF_SAMPLE_REGS_USER:
            abi = word(off)
            off += 8 + (8 * self.regs_user_n if abi else 0)
        if st & C.PERF_SAMPLE_STACK_USER:
            n = word(off)
            off += 8
            if n:
                off += n + 8
        for bit in (C.PERF_SAMPLE_WEIGHT | C.PERF_SAMPLE_WEIGHT_STRUCT, C.PERF_SAMPLE_DATA_SRC,
                    C.PERF_SAMPLE_TRANSACTION):
            if st & bit:
                off += 8
        if st & C.PERF_SAMPLE_REGS_INTR:
            abi = word(off)
            off += 8 + (8 * self.regs_intr_n if abi else 0)
        for bit in (C.PERF_SAMPLE_PHYS_ADDR, C.PERF_SAMPLE_CGROUP, C.PERF_SAMPLE_DATA_PAGE_SIZE,
                    C.PERF_SAMPLE_CODE_PAGE_SIZE):
            if st & bit:
                off += 8
        if st & C.PERF_SAMPLE_AUX:
            off += 8 + word(off)
        return off

    def parse_trailer(self, data):
        """The sample_id trailer of a non-sample record as a dict (empty without sample_id_all)."""
        if not self.trailer_names or len(data) - 8 < self.trailer.size:
            return {}
        vals = self.trailer.unpack_from(data, len(data) - self.trailer.size)
        return {n: v for n, v in zip(self.trailer_names, vals) if n}
