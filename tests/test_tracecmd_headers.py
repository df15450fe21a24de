"""The trace.dat metadata walked as libtracecmd reads it (deferstitch/tracecmd/headers.py): a
size that does not fit in the file is one line with its offset, exit 2 (libtracecmd 1.3 trusts
such sizes: its ``malloc(size + 1)`` wraps and the read after it overwrites the heap).

Positions are found here by a walk of the layout of trace-cmd.dat(5) written for the test, not
by the module under test; every valid trace.dat the tests have must pass the walk.
"""
import os
import struct
import subprocess

import pytest

from conftest import CAPTURES, DATA, run_cli, vm_size
import tracecmd_synth as S
from test_tracecmd_damage import need_trace_cmd, one_line_exit_2
from tracecmd_text import need_libtracecmd

REAL = CAPTURES / "ftrace" / "trace-userstacktrace.dat"


def v6_fields(data):
    """{name: (offset, width)} of each size field of a little-endian v6 file's metadata."""
    pos = data.index(b"\0", 10) + 1 + 6                 # version, endian, long size, page size
    out = {}

    def num(name, width):
        nonlocal pos
        out.setdefault(name, (pos, width))
        v = int.from_bytes(data[pos:pos + width], "little")
        pos += width
        return v

    for tag in (b"header_page\0", b"header_event\0"):
        assert data[pos:pos + len(tag)] == tag
        pos += len(tag)
        n = num(tag[:-1].decode(), 8)
        pos += n
    for _ in range(num("ftrace count", 4)):
        n = num("ftrace format", 8)
        pos += n
    for _ in range(num("systems", 4)):
        out.setdefault("system name", (pos, 0))
        pos = data.index(b"\0", pos) + 1
        for _ in range(num("format count", 4)):
            n = num("event format", 8)
            pos += n
    for name, width in (("kallsyms", 4), ("printk", 4), ("cmdlines", 8)):
        n = num(name, width)        # (pos += num() would add to the pos before the read)
        pos += n
        if pos > len(data):         # the damage of trace-open-badfree.dat
            return out
    num("cpus", 4)
    assert data[pos:pos + 9] in (b"options  ", b"flyrecord", b"latency  "), data[pos:pos + 10]
    return out


@pytest.fixture(scope="module")
def v6(tmp_path_factory):
    path = tmp_path_factory.mktemp("headers") / "deferred.dat"
    S.deferred(path)
    return path


def with_size(src, dst, offset, width, value):
    data = bytearray(src.read_bytes())
    data[offset:offset + width] = value.to_bytes(width, "little")
    dst.write_bytes(bytes(data))
    return dst


@pytest.mark.parametrize("field", ["header_page", "header_event", "ftrace format",
                                   "event format", "kallsyms", "printk", "cmdlines"])
@pytest.mark.parametrize("command", ["report", "script", "folded"])
def test_a_size_past_the_file_is_one_line_with_its_offset(v6, tmp_path, field, command):
    need_libtracecmd()
    offset, width = v6_fields(v6.read_bytes())[field]
    bad = with_size(v6, tmp_path / "bad.dat", offset, width, (1 << 8 * width) - 1)
    err = one_line_exit_2(run_cli("trace", command, bad), bad)
    assert "offset %#x: " % offset in err and "runs past the end of the file" in err, err


@pytest.mark.parametrize("version", [b"5", b"0", b" 6x"])
def test_versions_libtracecmd_reads_as_6_are_walked(v6, tmp_path, version):
    """libtracecmd takes strtol() of the version and opens every one up to 7 (0-6 in line)."""
    need_libtracecmd()
    offset, width = v6_fields(v6.read_bytes())["kallsyms"]
    data = bytearray(with_size(v6, tmp_path / "v.dat", offset, width, 0xffffffff).read_bytes())
    assert data[10:12] == b"6\0"
    bad = tmp_path / "bad.dat"
    bad.write_bytes(bytes(data[:10] + version + data[11:]))
    shift = len(version) - 1
    err = one_line_exit_2(run_cli("trace", "report", bad), bad)
    assert "offset %#x: kallsyms of 4294967295 bytes" % (offset + shift) in err, err


def test_a_name_from_the_file_cannot_break_the_line(v6, tmp_path):
    """The fuzzer's first find: a system name with a newline in the error about its format."""
    need_libtracecmd()
    fields = v6_fields(v6.read_bytes())
    offset, width = fields["event format"]
    bad = with_size(v6, tmp_path / "bad.dat", offset, width, (1 << 64) - 1)
    data = bytearray(bad.read_bytes())
    name = fields["system name"][0]
    data[name:name + 2] = b"\n\t"
    bad.write_bytes(bytes(data))
    err = one_line_exit_2(run_cli("trace", "report", bad), bad)
    assert "offset %#x: format 0 of '\\n\\t" % offset in err, err


def test_kallsyms_of_0xffffffff_is_refused_at_its_size(v6, tmp_path):
    """The size libtracecmd 3.1.6 trusts (a malloc(0), then a read of 4 GiB) is refused where
    it lies."""
    from deferstitch.errors import FormatError
    from deferstitch.tracecmd import bridge
    offset, width = v6_fields(v6.read_bytes())["kallsyms"]
    bad = with_size(v6, tmp_path / "bad.dat", offset, width, 0xffffffff)
    with pytest.raises(FormatError) as err:
        bridge.Trace(bad)
    assert err.value.offset == offset


def test_the_fuzzers_bad_free_is_the_same_line_every_time():
    """tests/data/trace-open-badfree.dat: kallsyms size 0xffffffff (libtracecmd 1.3 died of
    signal 6 or 11 on it, or lived and aborted later, as the heap lay): one line, every time."""
    path = DATA / "trace-open-badfree.dat"
    lines = {one_line_exit_2(run_cli("trace", "report", path), path) for _ in range(4)}
    offset, _ = v6_fields(path.read_bytes())["kallsyms"]
    assert lines == {"deferstitch: %s: offset %#x: kallsyms of 4294967295 bytes runs past the "
                     "end of the file (%d bytes)\n" % (path, offset, path.stat().st_size)}, lines


def test_v7_sections_are_walked(tmp_path):
    """A v7 file without compression: the kallsyms section's own size, then the size inside it."""
    need_trace_cmd()
    v7 = tmp_path / "v7.dat"
    subprocess.run(["trace-cmd", "convert", "-i", str(REAL), "-o", str(v7), "--file-version", "7",
                    "--compression", "none"], check=True, capture_output=True)
    data = v7.read_bytes()
    # the section header of KALLSYMS (19): u16 id, u16 flags 0, u32 string, u64 size, u32 size
    hits = [i for i in range(0, len(data) - 20)
            if data[i:i + 4] == struct.pack("<HH", 19, 0)
            and struct.unpack_from("<Q", data, i + 8)[0] == struct.unpack_from("<I", data, i + 16)[0] + 4]
    assert len(hits) == 1, hits
    inner = with_size(v7, tmp_path / "inner.dat", hits[0] + 16, 4, 0xffffffff)
    err = one_line_exit_2(run_cli("trace", "report", inner), inner)
    assert "offset %#x: kallsyms of 4294967295 bytes runs past the end of the section" % (hits[0] + 16) in err
    outer = with_size(v7, tmp_path / "outer.dat", hits[0] + 8, 8, 1 << 40)
    err = one_line_exit_2(run_cli("trace", "report", outer), outer)
    assert "offset %#x: section 19 of %d bytes runs past the end of the file" % (hits[0] + 8, 1 << 40) in err


def test_a_damaged_compressed_section_is_one_line(tmp_path):
    """trace-cmd 3.x's default: every metadata section a zstd (or zlib) block."""
    need_trace_cmd()
    v7 = tmp_path / "v7z.dat"
    subprocess.run(["trace-cmd", "convert", "-i", str(REAL), "-o", str(v7), "--file-version", "7",
                    "--compression", "any"], check=True, capture_output=True)
    data = bytearray(v7.read_bytes())
    at = data.index(b"\x28\xb5\x2f\xfd")                 # the first zstd frame: a section's block
    data[at + 8:at + 24] = b"\xff" * 16
    bad = tmp_path / "bad.dat"
    bad.write_bytes(bytes(data))
    err = one_line_exit_2(run_cli("trace", "report", bad), bad)
    assert "its compressed block does not decompress (zstd: " in err, err


def test_every_valid_trace_dat_passes_the_walk(v6, tmp_path):
    need_trace_cmd()
    from deferstitch.tracecmd import headers
    files = [v6, REAL]
    for make in (S.instances, S.userstack, S.missed_per_cpu):
        files.append(tmp_path / (make.__name__ + ".dat"))
        make(files[-1])
    for version in (6, 7):
        for compression in ("none", "any"):
            out = tmp_path / ("real-%d-%s.dat" % (version, compression))
            subprocess.run(["trace-cmd", "convert", "-i", str(REAL), "-o", str(out),
                            "--file-version", str(version), "--compression", compression],
                           check=True, capture_output=True)
            files.append(out)
    versions = []
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        try:
            versions.append(headers.collect(str(f), fd, texts=False).version)
        finally:
            os.close(fd)
    assert set(versions) == {6, 7}, list(zip(files, versions))


def test_an_option_of_4_gib_leaks_nothing_into_our_process():
    """tests/data/trace-malloc-4g.dat: option size 0xffffffff. libtracecmd 1.3's handle_options
    mallocs it, the read fails and the buffer is never freed: 4 GiB of address space per open.
    Adjacent leaks merge into one mapping, and past the machine's memory every fork is ENOMEM
    (CI: 74 tests failed that way after the fuzz tests had opened such files in the test run)."""
    need_libtracecmd()
    from deferstitch.errors import FormatError
    from deferstitch.tracecmd import bridge
    before = vm_size()
    for _ in range(3):
        with pytest.raises(FormatError, match="ends inside option 65535"):
            bridge.Trace(DATA / "trace-malloc-4g.dat")
    assert vm_size() - before < 1 << 30, (before, vm_size())
