"""Bodies of the non-sample PERF_RECORD_* types we use, decoded from a record's bytes.

``data`` is always the whole record, header included; ``body_end`` excludes the sample_id trailer.
Each decoder quotes the C layout it reads (include/uapi/linux/perf_event.h,
tools/lib/perf/include/perf/event.h).
"""
import struct
from collections import namedtuple

from . import consts as C

Mmap = namedtuple("Mmap", "pid tid addr len pgoff filename build_id prot flags")
Comm = namedtuple("Comm", "pid tid comm exec_")
Task = namedtuple("Task", "pid ppid tid ptid time")
Lost = namedtuple("Lost", "id lost")
Ksymbol = namedtuple("Ksymbol", "addr len ksym_type flags name")
Deferred = namedtuple("Deferred", "cookie ips")
IdIndexEntry = namedtuple("IdIndexEntry", "id idx cpu tid")
Auxtrace = namedtuple("Auxtrace", "size offset reference idx tid cpu")


def _cstr(buf, start, end):
    raw = bytes(buf[start:end])
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def _need(data, end, what):
    if end > len(data):
        raise ValueError("%s needs %d bytes, record has %d" % (what, end, len(data)))


def parse_mmap(data, e, body_end):
    # struct { header; u32 pid, tid; u64 addr, len, pgoff; char filename[]; sample_id }  /* MMAP */
    _need(data, 40, "MMAP")
    pid, tid, addr, ln, pgoff = struct.unpack_from(e + "iiQQQ", data, 8)
    return Mmap(pid, tid, addr, ln, pgoff, _cstr(data, 40, body_end), None, None, None)


def parse_mmap2(data, e, body_end, misc):
    # struct { header; u32 pid, tid; u64 addr, len, pgoff;
    #          union { struct { u32 maj, min; u64 ino, ino_generation; };
    #                  struct { u8 build_id_size, __reserved_1; u16 __reserved_2; u8 build_id[20]; }; };
    #          u32 prot, flags; char filename[]; sample_id }                              /* MMAP2 */
    _need(data, 72, "MMAP2")
    pid, tid, addr, ln, pgoff = struct.unpack_from(e + "iiQQQ", data, 8)
    build_id = None
    if misc & C.PERF_RECORD_MISC_MMAP_BUILD_ID:
        n = min(data[40], 20)
        build_id = bytes(data[44:44 + n]).hex()
    prot, flags = struct.unpack_from(e + "II", data, 64)
    return Mmap(pid, tid, addr, ln, pgoff, _cstr(data, 72, body_end), build_id, prot, flags)


def parse_comm(data, e, body_end, misc):
    # struct { header; u32 pid, tid; char comm[]; sample_id }                             /* COMM */
    _need(data, 16, "COMM")
    pid, tid = struct.unpack_from(e + "ii", data, 8)
    return Comm(pid, tid, _cstr(data, 16, body_end), bool(misc & C.PERF_RECORD_MISC_COMM_EXEC))


def parse_task(data, e):
    # struct { header; u32 pid, ppid; u32 tid, ptid; u64 time; sample_id }          /* FORK, EXIT */
    _need(data, 32, "FORK/EXIT")
    return Task(*struct.unpack_from(e + "iiiiQ", data, 8))


def parse_lost(data, e):
    # struct { header; u64 id; u64 lost; sample_id }                                      /* LOST */
    _need(data, 24, "LOST")
    return Lost(*struct.unpack_from(e + "QQ", data, 8))


def parse_lost_samples(data, e):
    # struct { header; u64 lost; sample_id }                                      /* LOST_SAMPLES */
    _need(data, 16, "LOST_SAMPLES")
    return Lost(None, struct.unpack_from(e + "Q", data, 8)[0])


def parse_ksymbol(data, e, body_end):
    # struct { header; u64 addr; u32 len; u16 ksym_type; u16 flags; char name[]; sample_id }
    _need(data, 24, "KSYMBOL")
    addr, ln, kt, fl = struct.unpack_from(e + "QIHH", data, 8)
    return Ksymbol(addr, ln, kt, fl, _cstr(data, 24, body_end))


# The two layouts of PERF_RECORD_CALLCHAIN_DEFERRED, told apart by the record's size.
DEFERRED_COOKIE, DEFERRED_NO_COOKIE = C.DEFERRED_COOKIE, C.DEFERRED_NO_COOKIE


def deferred_layout(data, e, body_end):
    """Which CALLCHAIN_DEFERRED layout ``data`` has: the one whose nr fills the body exactly
    (a cookie is >= 1 << 32 and a pre-cookie ips[0] is PERF_CONTEXT_USER, so only one can);
    None when neither does."""
    if body_end >= 24 and struct.unpack_from(e + "Q", data, 16)[0] * 8 + 24 == body_end:
        return DEFERRED_COOKIE
    if body_end >= 16 and struct.unpack_from(e + "Q", data, 8)[0] * 8 + 16 == body_end:
        return DEFERRED_NO_COOKIE
    return None


def parse_deferred(data, e, body_end, layout=DEFERRED_COOKIE):
    # struct {            /* PERF_RECORD_CALLCHAIN_DEFERRED (22), Linux 6.19 (cookie patch, v15) */
    #   struct perf_event_header header;
    #   u64 cookie; u64 nr; u64 ips[nr];
    #   struct sample_id sample_id;
    # };
    # struct {            /* before the cookie: "perf: Support deferred user callchains", 2025 */
    #   struct perf_event_header header;
    #   u64 nr; u64 ips[nr];
    #   struct sample_id sample_id;
    # };                  /* cookie None */
    if layout == DEFERRED_NO_COOKIE:
        _need(data, 16, "CALLCHAIN_DEFERRED")
        cookie, nr, start = None, struct.unpack_from(e + "Q", data, 8)[0], 16
    else:
        _need(data, 24, "CALLCHAIN_DEFERRED")
        cookie, nr = struct.unpack_from(e + "QQ", data, 8)
        start = 24
    if nr > (body_end - start) // 8:
        raise ValueError("CALLCHAIN_DEFERRED nr=%d exceeds record size %d" % (nr, len(data)))
    return Deferred(cookie, struct.unpack_from(e + "%dQ" % nr, data, start))


def parse_id_index(data, e):
    # struct { header; u64 nr; struct id_index_entry { u64 id, idx, cpu, tid; } entries[nr];
    #          [struct id_index_entry_2 { u64 machine_pid, vcpu; } entries2[nr]]; }   /* ID_INDEX */
    _need(data, 16, "ID_INDEX")
    nr = struct.unpack_from(e + "Q", data, 8)[0]
    if nr > (len(data) - 16) // 32:
        raise ValueError("ID_INDEX nr=%d exceeds record size %d" % (nr, len(data)))
    return [IdIndexEntry(*struct.unpack_from(e + "QQQQ", data, 16 + 32 * i)) for i in range(nr)]


def parse_auxtrace_info(data, e):
    # struct { header; u32 type; u32 reserved__; u64 priv[]; }  /* AUXTRACE_INFO, perf 4.1 */
    _need(data, 12, "AUXTRACE_INFO")
    return struct.unpack_from(e + "I", data, 8)[0]


def parse_auxtrace(data, e):
    # struct { header; u64 size, offset, reference; u32 idx, tid, cpu, reserved__; }
    #   /* AUXTRACE, perf 4.1: ``size`` bytes of trace follow the record, outside header.size */
    _need(data, 48, "AUXTRACE")
    return Auxtrace(*struct.unpack_from(e + "QQQIiI", data, 8))


def parse_header_attr_ids(data, e, attr_size):
    # struct { header; struct perf_event_attr attr; u64 id[]; }                    /* HEADER_ATTR */
    start = 8 + attr_size
    n = (len(data) - start) // 8
    return list(struct.unpack_from(e + "%dQ" % n, data, start)) if n > 0 else []


def parse_event_update_name(data, e):
    # struct { header; u64 type; u64 id; union { char name[]; ... } }  /* EVENT_UPDATE, type 2 = NAME */
    if len(data) < 24:
        return None
    typ, ident = struct.unpack_from(e + "QQ", data, 8)
    if typ != 2:
        return None
    return ident, _cstr(data, 24, len(data))
