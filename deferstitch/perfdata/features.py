"""Feature sections (HEADER_*): the few we decode, every other one kept as raw bytes.

    struct perf_header_string { u32 len; char string[len]; };   /* len padded to NAME_ALIGN 64 */
    struct perf_header_string_list { u32 nr; struct perf_header_string strings[nr]; };
"""
import struct

from ..abi.attr import PerfEventAttr
from ..abi.consts import FEATURE_NAMES

NAME_ALIGN = 64


def read_string(buf, off, e):
    n = struct.unpack_from(e + "I", buf, off)[0]
    if off + 4 + n > len(buf):
        raise ValueError("string of %d bytes overruns its section" % n)
    return buf[off + 4:off + 4 + n].split(b"\0", 1)[0].decode("utf-8", "replace"), off + 4 + n


def pack_string(s, e):
    raw = s.encode() + b"\0"
    n = (len(raw) + NAME_ALIGN - 1) // NAME_ALIGN * NAME_ALIGN
    return struct.pack(e + "I", n) + raw.ljust(n, b"\0")


def parse_event_desc(buf, e):
    """EVENT_DESC: [(attr, name, ids)].

    struct { u32 nr; u32 attr_size;
             struct { perf_event_attr attr[attr_size]; u32 nr_ids; perf_header_string name;
                      u64 ids[nr_ids]; } events[nr]; }
    """
    nr, asz = struct.unpack_from(e + "II", buf, 0)
    off, out = 8, []
    for _ in range(nr):
        attr = PerfEventAttr.parse(buf, off, asz, e)
        off += asz
        nids = struct.unpack_from(e + "I", buf, off)[0]
        name, off = read_string(buf, off + 4, e)
        ids = list(struct.unpack_from(e + "%dQ" % nids, buf, off))
        off += 8 * nids
        out.append((attr, name, ids))
    return out


def pack_event_desc(events, e, attr_size, clear_defer):
    out = [struct.pack(e + "II", len(events), attr_size)]
    for attr, name, ids in events:
        out.append(attr.pack(attr_size, clear_defer))
        out.append(struct.pack(e + "I", len(ids)))
        out.append(pack_string(name, e))
        out.append(struct.pack(e + "%dQ" % len(ids), *ids))
    return b"".join(out)


def decode(bit, buf, e):
    """A human/JSON view of the features we understand; None for the rest."""
    name = FEATURE_NAMES.get(bit)
    if name in ("HOSTNAME", "OSRELEASE", "VERSION", "ARCH", "CPUDESC", "CPUID"):
        return read_string(buf, 0, e)[0]
    if name == "CMDLINE":
        nr, off, out = struct.unpack_from(e + "I", buf, 0)[0], 4, []
        for _ in range(nr):
            s, off = read_string(buf, off, e)
            out.append(s)
        return out
    if name == "NRCPUS":
        avail, online = struct.unpack_from(e + "II", buf, 0)
        return {"nr_cpus_available": avail, "nr_cpus_online": online}
    if name == "TOTAL_MEM":
        return struct.unpack_from(e + "Q", buf, 0)[0]
    if name == "EVENT_DESC":
        return [{"name": n, "ids": ids} for _a, n, ids in parse_event_desc(buf, e)]
    if name == "COMPRESSED":
        v = struct.unpack_from(e + "5I", buf, 0)
        return dict(zip(("version", "type", "level", "ratio", "mmap_len"), v))
    if name == "BUILD_ID":
        return parse_build_ids(buf, e)
    return None


def parse_build_ids(buf, e):
    """BUILD_ID: build_id_event { header; s32 pid; u8 build_id[24]; char filename[]; } ...

    Since perf 5.x the header's misc carries PERF_RECORD_MISC_BUILD_ID_SIZE (1 << 15) and the
    size sits in byte 20 of the build_id array's padding; older files have 20-byte SHA1 ids.
    """
    off, out = 0, []
    while off + 8 <= len(buf):
        _typ, misc, size = struct.unpack_from(e + "IHH", buf, off)
        if size < 36 or off + size > len(buf):
            break
        pid = struct.unpack_from(e + "i", buf, off + 8)[0]
        bid = buf[off + 12:off + 36]
        n = bid[20] if misc & (1 << 15) else 20
        fname = buf[off + 36:off + size].split(b"\0", 1)[0].decode("utf-8", "replace")
        out.append({"pid": pid, "build_id": bid[:n].hex(), "filename": fname})
        off += size
    return out
