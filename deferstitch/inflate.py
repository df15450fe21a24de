"""Bounded decompression of zlib and zstd blocks, and the one choice of zstd module: the
zstandard package, else Python 3.14's compression.zstd (perf's embedded Python may have only
the standard library). A block never inflates past the size its container declares.

    zlib_block(raw, size), zstd_block(raw, size)  at most size bytes (sections, debug info)
    exact(name, raw, size)    exactly size bytes or None (trace.dat's CPU data chunks)
    zstd_stream()             a streaming decompressor (perf.data's COMPRESSED records)
    c_codecs()                libzstd's and zlib's functions, for the C page walker
"""
import zlib

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class NoZstd(ImportError):
    """Neither zstandard nor compression.zstd is importable here."""


def _zstd_module():
    """The zstd module this Python has: zstandard, else compression.zstd; NoZstd without."""
    try:
        import zstandard
        return zstandard
    except ImportError:
        pass
    try:
        from compression import zstd                    # Python 3.14
        return zstd
    except ImportError:
        raise NoZstd("no zstd module (pip install zstandard, or apt-get install "
                     "python3-zstandard)") from None


def available(name):
    """True where this Python can decompress blocks of that compression ("zlib", "zstd")."""
    if name == "zlib":
        return True
    if name != "zstd":
        return False
    try:
        _zstd_module()
        return True
    except NoZstd:
        return False


def kind(raw):
    """"zstd" for a block that starts with a zstd frame, else "zlib" (trace.dat's sections)."""
    return "zstd" if raw[:4] == ZSTD_MAGIC else "zlib"


def zlib_block(raw, size):
    """At most ``size`` bytes of a zlib stream; zlib.error on a damaged one."""
    if not size:                                        # (zlib's max_length 0 is no limit)
        return b""
    return zlib.decompressobj().decompress(raw, size)


def zstd_block(raw, size):
    """At most ``size`` bytes of zstd frames, frame after frame; ValueError on a damaged one
    (with compression.zstd also a frame cut short), NoZstd without a zstd module."""
    if not size:
        return b""
    zstd = _zstd_module()
    try:
        if zstd.__name__ == "zstandard":
            reader, parts, got = zstd.ZstdDecompressor().stream_reader(raw, read_across_frames=True), [], 0
            while got < size:
                more = reader.read(min(size - got, 1 << 24))
                if not more:
                    break
                parts.append(more)
                got += len(more)
            return b"".join(parts)
        return _stdlib_frames(zstd, raw, size)
    except Exception as err:        # zstandard.ZstdError, compression.zstd.ZstdError
        raise ValueError("zstd: %s" % err) from None


def _stdlib_frames(zstd, raw, size):
    """zstd_block with compression.zstd, whose decompressor reads one frame."""
    out = b""
    while raw and len(out) < size:
        d = zstd.ZstdDecompressor()
        out += d.decompress(raw, max_length=size - len(out))
        if not d.eof:
            if len(out) < size:
                raise zstd.ZstdError("a frame cut short")
            break
        raw = d.unused_data
    return out


def exact(name, raw, size):
    """raw decompressed to exactly size bytes, or None where it does not (a library error, or
    another size): what _tracedat.c's decompress() accepts, ZSTD_decompress (every frame) or
    zlib's uncompress (a zlib stream; bytes after its end ignored). Never more than size + 1
    bytes are made, whatever raw says."""
    if name == "zlib":
        d = zlib.decompressobj()
        try:
            out = d.decompress(raw, size + 1)
        except zlib.error:
            return None
        return out if d.eof and len(out) == size else None
    try:
        out = zstd_block(raw, size + 1)
    except ValueError:
        return None
    return out if len(out) == size else None


def zstd_stream():
    """(new decompressor, its error class) for one zstd stream fed in pieces (decompress(),
    eof, unused_data); NoZstd without a zstd module."""
    zstd = _zstd_module()
    if zstd.__name__ == "zstandard":
        return (lambda: zstd.ZstdDecompressor().decompressobj()), zstd.ZstdError
    return zstd.ZstdDecompressor, zstd.ZstdError


def c_codecs():
    """(ZSTD_decompress, ZSTD_isError, zlib's uncompress) addresses, 0 where that library is
    not here: found with ctypes, so Python's own dlopen loads them and the C walker links
    none (glibc 2.34 gave dlopen a new version, which would raise its wheel's manylinux tag)."""
    import ctypes

    def find(lib, *names):
        try:
            h = ctypes.CDLL(lib)
            return [ctypes.cast(getattr(h, n), ctypes.c_void_p).value or 0 for n in names]
        except (OSError, AttributeError):
            return [0] * len(names)
    zd, ze = find("libzstd.so.1", "ZSTD_decompress", "ZSTD_isError")
    (zu,) = find("libz.so.1", "uncompress")
    return zd, ze, zu
