"""perf_header and perf_file_section — the fixed start of a file-mode perf.data.

    struct perf_file_section { u64 offset; u64 size; };
    struct perf_header {              /* 104 bytes, native endian of the recording machine */
      char magic[8];                  /* "PERFILE2"; byte-swapped => the other endianness */
      u64 size;                       /* sizeof(struct perf_header) */
      u64 attr_size;                  /* one attrs entry: perf_event_attr + perf_file_section ids */
      struct perf_file_section attrs, data, event_types;
      u64 flags; u64 flags1[3];       /* HEADER_FEAT_BITS = 256 feature bits */
    };
    struct perf_pipe_file_header { u64 magic; u64 size; /* 16 */ };
"""
import struct
from collections import namedtuple

MAGIC = b"PERFILE2"
MAGIC_SWAPPED = MAGIC[::-1]
HEADER_SIZE = 104
PIPE_HEADER_SIZE = 16

FileHeader = namedtuple("FileHeader", "size attr_size attrs data event_types features")
Section = namedtuple("Section", "offset size")


def endian_of(magic):
    """'<' or '>' from the 8 magic bytes, None when they are not a perf.data magic.

    The magic is the u64 0x32454c4946524550 written native-endian, so a little-endian file
    starts with the bytes "PERFILE2" and a big-endian one with "2ELIFREP".
    """
    if magic == MAGIC:
        return "<"
    if magic == MAGIC_SWAPPED:
        return ">"
    return None


def parse_header(buf, e):
    size, attr_size = struct.unpack_from(e + "QQ", buf, 8)
    secs = struct.unpack_from(e + "6Q", buf, 24)
    flags = struct.unpack_from(e + "4Q", buf, 72)
    features = [b for b in range(256) if flags[b // 64] >> (b % 64) & 1]
    return FileHeader(size, attr_size, Section(secs[0], secs[1]), Section(secs[2], secs[3]),
                      Section(secs[4], secs[5]), features)


def pack_header(e, attr_size, attrs, data, features):
    words = [0, 0, 0, 0]
    for b in features:
        words[b // 64] |= 1 << (b % 64)
    magic = MAGIC if e == "<" else MAGIC_SWAPPED
    return magic + struct.pack(e + "QQ6Q4Q", HEADER_SIZE, attr_size, attrs.offset, attrs.size,
                               data.offset, data.size, 0, 0, *words)


def pack_pipe_header(e):
    return (MAGIC if e == "<" else MAGIC_SWAPPED) + struct.pack(e + "Q", PIPE_HEADER_SIZE)
