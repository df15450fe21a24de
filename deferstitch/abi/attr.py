"""perf_event_attr — the event description in every perf.data (include/uapi/linux/perf_event.h).

We keep the raw bytes (so that a rewrite loses nothing we do not know) and decode the fields that
the sample layout and the report need. Sizes: VER0 64 … VER7 128 (sig_data), VER8 136 (config3),
VER9 144 (config4, perf 7.x). A shorter attr is zero-filled, a longer one keeps its tail.
"""
import struct


PERF_ATTR_SIZE_VER0 = 64
PERF_ATTR_SIZE_VER7 = 128      # what perf 6.1 knows: it refuses anything larger
PERF_ATTR_SIZE_VER9 = 144

# struct perf_event_attr {
#   u32 type; u32 size; u64 config; u64 sample_period; u64 sample_type; u64 read_format;
#   u64 disabled:1, inherit:1, ... sample_id_all:18 ... defer_callchain:38, defer_output:39;
#   u32 wakeup_events; u32 bp_type; u64 config1; u64 config2; u64 branch_sample_type;
#   u64 sample_regs_user; u32 sample_stack_user; s32 clockid; u64 sample_regs_intr; ...
# };
_FIELDS = [  # (name, offset, struct code)
    ("type", 0, "I"), ("size", 4, "I"), ("config", 8, "Q"), ("sample_period", 16, "Q"),
    ("sample_type", 24, "Q"), ("read_format", 32, "Q"), ("flags", 40, "Q"),
    ("config1", 56, "Q"), ("config2", 64, "Q"), ("branch_sample_type", 72, "Q"),
    ("sample_regs_user", 80, "Q"), ("sample_stack_user", 88, "I"), ("sample_regs_intr", 96, "Q"),
]
FLAGS_OFFSET = 40

# Bits of the flags word at offset 40, in uapi order.
FLAG_BITS = [
    "disabled", "inherit", "pinned", "exclusive", "exclude_user", "exclude_kernel", "exclude_hv",
    "exclude_idle", "mmap", "comm", "freq", "inherit_stat", "enable_on_exec", "task", "watermark",
    "precise_ip", "precise_ip_hi", "mmap_data", "sample_id_all", "exclude_host", "exclude_guest",
    "exclude_callchain_kernel", "exclude_callchain_user", "mmap2", "comm_exec", "use_clockid",
    "context_switch", "write_backward", "namespaces", "ksymbol", "bpf_event", "aux_output",
    "cgroup", "text_poke", "build_id", "inherit_thread", "remove_on_exec", "sigtrap",
    "defer_callchain", "defer_output",
]
BIT_DISABLED = 1 << 0
BIT_INHERIT = 1 << 1
BIT_ENABLE_ON_EXEC = 1 << 12
BIT_SAMPLE_ID_ALL = 1 << 18
BIT_USE_CLOCKID = 1 << 25
BIT_DEFER_CALLCHAIN = 1 << 38   # Linux 6.19: "perf: Support deferred user unwind"
BIT_DEFER_OUTPUT = 1 << 39


class PerfEventAttr:
    """One perf_event_attr as stored in the file, with the fields we use decoded."""

    __slots__ = ("raw", "endian") + tuple(f[0] for f in _FIELDS)

    def __init__(self, raw, endian):
        self.raw = bytes(raw)
        self.endian = endian
        padded = self.raw.ljust(PERF_ATTR_SIZE_VER9, b"\0")
        for name, off, code in _FIELDS:
            setattr(self, name, struct.unpack_from(endian + code, padded, off)[0])

    @classmethod
    def parse(cls, buf, offset, length, endian):
        """The attr at buf[offset:offset+length] (length = the room the container gives it)."""
        return cls(buf[offset:offset + length], endian)

    @property
    def sample_id_all(self):
        return bool(self.flags & BIT_SAMPLE_ID_ALL)

    @property
    def disabled(self):
        return bool(self.flags & BIT_DISABLED)

    @property
    def inherit(self):
        return bool(self.flags & BIT_INHERIT)

    @property
    def enable_on_exec(self):
        return bool(self.flags & BIT_ENABLE_ON_EXEC)

    @property
    def defer_callchain(self):
        return bool(self.flags & BIT_DEFER_CALLCHAIN)

    @property
    def use_clockid(self):
        return bool(self.flags & BIT_USE_CLOCKID)

    @property
    def clockid(self):
        """s32 clockid at offset 92 (PERF_ATTR_SIZE_VER4), meaningful with use_clockid."""
        return struct.unpack_from(self.endian + "i", self.raw.ljust(96, b"\0"), 92)[0]

    @property
    def defer_output(self):
        return bool(self.flags & BIT_DEFER_OUTPUT)

    def pack(self, size=None, clear_defer=False):
        """The attr as bytes of ``size`` (default: as read), attr.size set to match.

        Shrinking drops a tail that must be zero: we never silently lose a config3/config4.
        """
        raw = bytearray(self.raw)
        size = len(raw) if size is None else size
        if size < len(raw):
            if any(raw[size:]):
                from ..errors import UnsupportedError
                raise UnsupportedError("attr (type %d, config %#x) has non-zero bytes past %d; "
                                       "perf 6.1 cannot hold it" % (self.type, self.config, size))
            del raw[size:]
        raw = raw.ljust(size, b"\0")
        struct.pack_into(self.endian + "I", raw, 4, size)
        if clear_defer:
            flags = self.flags & ~(BIT_DEFER_CALLCHAIN | BIT_DEFER_OUTPUT)
            struct.pack_into(self.endian + "Q", raw, FLAGS_OFFSET, flags)
        return bytes(raw)

