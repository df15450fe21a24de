"""Bounded decompression of zlib and zstd blocks, and the one choice of zstd module: the
zstandard package, else Python 3.14's compression.zstd (perf's embedded Python may have only
the standard library). A block never inflates past the size its container declares."""
import zlib


class NoZstd(ImportError):
    """Neither zstandard nor compression.zstd is importable here."""


def zlib_block(raw, size):
    """At most ``size`` bytes of a zlib stream; zlib.error on a damaged one."""
    if not size:                                        # (zlib's max_length 0 is no limit)
        return b""
    return zlib.decompressobj().decompress(raw, size)


def zstd_block(raw, size):
    """At most ``size`` bytes of zstd frames; ValueError on a damaged one, NoZstd without a
    zstd module."""
    if not size:
        return b""
    try:
        import zstandard
    except ImportError:
        zstandard = None
    try:
        if zstandard is not None:
            reader, parts, got = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True), [], 0
            while got < size:
                more = reader.read(min(size - got, 1 << 24))
                if not more:
                    break
                parts.append(more)
                got += len(more)
            return b"".join(parts)
        try:
            from compression import zstd                 # Python 3.14
        except ImportError:
            raise NoZstd("no zstd module (pip install zstandard, or apt-get install "
                         "python3-zstandard)") from None
        return zstd.ZstdDecompressor().decompress(raw, max_length=size)
    except NoZstd:
        raise
    except Exception as err:        # zstandard.ZstdError, compression.zstd.ZstdError
        raise ValueError("zstd: %s" % err) from None
