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

The first format (perf before 2.6.37, PERF_HEADER_VERSION_1) has the same layout under the magic
"PERFFILE", which says nothing of the byte order: perf's check_magic_endian() takes it from
attr_size, one of the known attr sizes plus 16 in one order or the other (try_all_file_abis), or
from the pipe header's size 16 (try_all_pipe_abis). A header of 72 bytes (up to adds_features,
"the previous format") has no feature bits.
"""
import struct
from collections import namedtuple

MAGIC = b"PERFILE2"
MAGIC_SWAPPED = MAGIC[::-1]
MAGIC_V1 = b"PERFFILE"
HEADER_SIZE = 104
HEADER_SIZE_NO_FEATURES = 72    # offsetof(struct perf_file_header, adds_features)
ATTR_ABI_SIZES = (64, 72, 80, 96, 104)   # PERF_ATTR_SIZE_VER0..4, as try_all_file_abis lists them
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


def legacy_endian(raw_size, raw_attr_size):
    """The byte order of a "PERFFILE" header from its size and attr_size fields (8 raw bytes
    each; ``raw_attr_size`` None for a pipe), or None when neither order gives a known size."""
    for e in "<>":
        if struct.unpack(e + "Q", raw_size)[0] == PIPE_HEADER_SIZE:
            return e
    if raw_attr_size is None:
        return None
    for e in "<>":
        if struct.unpack(e + "Q", raw_attr_size)[0] - 16 in ATTR_ABI_SIZES:
            return e
    return None


def parse_header(buf, e):
    size, attr_size = struct.unpack_from(e + "QQ", buf, 8)
    secs = struct.unpack_from(e + "6Q", buf, 24)
    flags = struct.unpack_from(e + "4Q", buf, 72) if size == HEADER_SIZE else (0, 0, 0, 0)
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
