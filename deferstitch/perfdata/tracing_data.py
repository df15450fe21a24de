"""HEADER_TRACING_DATA — the tracepoint formats perf stores (tools/perf/util/trace-event-info.c),
read for what names a tracepoint event (each format's "name:" and "ID:" under its system) and
for the formats of the events whose fields a command reads (perfdata/sched.py).

    "\\x17\\x08\\x44tracing" "0.5\\0" | "0.6\\0"          /* magic, version */
    u8 big_endian; u8 sizeof(long); u32 page_size;
    "header_page\\0" u64 size, data;  "header_event\\0" u64 size, data;
    u32 count; { u64 size; char format[size]; } ftrace[count];
    u32 nr_systems; { char system[] "\\0"; u32 count; { u64 size; char format[size]; }[count]; }[]
    ... kallsyms, printk formats, saved cmdlines (not read here)

perf names a tracepoint evsel "system:name" from the format whose ID is its attr.config.
"""
import re
import struct

MAGIC = b"\x17\x08\x44tracing"
_NAME = re.compile(rb"^name: (\S+)$", re.M)
_ID = re.compile(rb"^ID: (\d+)$", re.M)


def event_names(buf):
    """{tracepoint id: "system:name"} of a tracing data blob; what comes before damage."""
    return {ident: "%s:%s" % (system, name) for ident, system, name, _fmt in formats(buf)}


def event_format(buf, ident):
    """(system, format text) of tracepoint ``ident`` in a tracing data blob, or None."""
    for i, system, _name, fmt in formats(buf):
        if i == ident:
            return system, fmt
    return None


def formats(buf):
    """(id, system, name, format text) of each event format of a tracing data blob; those read
    before damage (names and formats are a nicety: a damaged blob still names what it can)."""
    out = []
    if not buf.startswith(MAGIC):
        return out
    try:
        off = buf.index(b"\0", len(MAGIC)) + 1          # version string
        e = ">" if buf[off] else "<"
        off += 6                                        # big_endian, sizeof(long), page_size
        for section in (b"header_page\0", b"header_event\0"):
            if buf[off:off + len(section)] != section:
                return out
            off += len(section)
            off += 8 + struct.unpack_from(e + "Q", buf, off)[0]
        count = struct.unpack_from(e + "I", buf, off)[0]
        off += 4
        for _ in range(count):                          # ftrace's own formats: no system name
            off += 8 + struct.unpack_from(e + "Q", buf, off)[0]
        systems = struct.unpack_from(e + "I", buf, off)[0]
        off += 4
        for _ in range(systems):
            end = buf.index(b"\0", off)
            system = bytes(buf[off:end]).decode("utf-8", "replace")
            count = struct.unpack_from(e + "I", buf, end + 1)[0]
            off = end + 5
            for _ in range(count):
                size = struct.unpack_from(e + "Q", buf, off)[0]
                fmt = bytes(buf[off + 8:off + 8 + size])
                off += 8 + size
                name, ident = _NAME.search(fmt), _ID.search(fmt)
                if name and ident:
                    out.append((int(ident.group(1)), system, name.group(1).decode("utf-8", "replace"), fmt))
    except (struct.error, ValueError, IndexError):
        pass
    return out
