"""inflate.py, the one choice of zstd module: bounded blocks, every frame, the walker's
exact rule, and the streaming decompressor perf.data's COMPRESSED records use."""
import zlib

import pytest

from deferstitch import inflate

zstandard = pytest.importorskip("zstandard")
TEXT = bytes(range(256)) * 64


def frame(data):
    return zstandard.ZstdCompressor().compress(data)


def test_blocks_are_bounded_and_read_every_frame():
    two = frame(TEXT) + frame(TEXT[::-1])
    assert inflate.zstd_block(two, 1 << 20) == TEXT + TEXT[::-1]
    assert inflate.zstd_block(two, 100) == TEXT[:100]
    assert inflate.zlib_block(zlib.compress(TEXT), 100) == TEXT[:100]
    assert inflate.zstd_block(two, 0) == inflate.zlib_block(b"junk", 0) == b""
    assert inflate.kind(two) == "zstd" and inflate.kind(zlib.compress(TEXT)) == "zlib"


def test_damage_is_a_value_error_naming_zstd():
    with pytest.raises(ValueError, match="^zstd: "):
        inflate.zstd_block(frame(TEXT) + b"junk", 1 << 20)


def test_exact_takes_only_the_size_stated():
    z, s = zlib.compress(TEXT), frame(TEXT)
    for raw in (z, s):
        name = inflate.kind(raw)
        assert inflate.exact(name, raw, len(TEXT)) == TEXT
        assert inflate.exact(name, raw, len(TEXT) - 1) is None
        assert inflate.exact(name, raw, len(TEXT) + 1) is None
    assert inflate.exact("zlib", z[:-4], len(TEXT)) is None      # no end of stream
    assert inflate.exact("zstd", s + b"junk", len(TEXT)) is None
    assert inflate.available("zlib") and inflate.available("zstd")
    assert not inflate.available("lz4")


def test_the_stream_reads_frames_fed_in_pieces():
    new, error = inflate.zstd_stream()
    d, raw, out = new(), frame(TEXT), []
    for i in range(0, len(raw), 7):
        out.append(d.decompress(raw[i:i + 7]))
    assert b"".join(out) == TEXT and d.eof
    with pytest.raises(error):
        new().decompress(b"\x28\xb5\x2f\xfd" + b"\xff" * 16)
