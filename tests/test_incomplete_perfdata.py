"""A perf.data perf is still writing (or was killed while writing): its header says data.size 0
and no features follow the records yet. perf 7.2 warns and reads nothing of it; we warn in one
line and read the records to the end of the file, on the C engine and on the Python path alike.
A file cut inside a record is still the one-line error with its offset, exit 2."""
import json
import os
import struct

import pytest

from conftest import capture, need_engine, run_cli

FEATURES_AT = 72          # perf_file_header: adds_features bitmap (256 bits) after flags


def live_copy(path, out, data_size=0):
    """The capture as perf record leaves it while writing: header data.size ``data_size``
    (0: not written yet), feature bits set, nothing after the records."""
    raw = bytearray(path.read_bytes())
    off, size = struct.unpack_from("<QQ", raw, 40)
    raw = raw[:off + size]
    struct.pack_into("<Q", raw, 48, data_size)
    out.write_bytes(bytes(raw))
    return out


def cli(*args, accel):
    return run_cli(*args, env={**os.environ, "DEFERSTITCH_ACCEL": accel})


@pytest.mark.parametrize("accel", ["require", "0"])
@pytest.mark.parametrize("scenario", ["a_per_task", "compressed"])
def test_data_size_zero_reads_to_the_end(tmp_path, scenario, accel):
    need_engine(accel)
    path, _ = capture(scenario)
    live = live_copy(path, tmp_path / "live.data")
    whole = json.loads(cli("report", path, "--json", accel=accel).stdout)
    p = cli("report", live, "--json", accel=accel)
    assert p.returncode == 0, p.stderr
    err = p.stderr.decode().splitlines()
    assert len(err) == 1 and "data.size is 0" in err[0] and str(live) in err[0], err
    assert json.loads(p.stdout) == whole
    f_live = cli("folded", live, "--no-symbols", "-q", accel=accel)
    assert f_live.returncode == 0 and f_live.stderr == b""
    assert f_live.stdout == cli("folded", path, "--no-symbols", accel=accel).stdout
    info = run_cli("info", live, "--json")
    assert info.returncode == 0 and "data.size is 0" in json.loads(info.stdout)["warning"]


def test_header_promising_less_without_features(tmp_path):
    path, _ = capture("b_per_task")
    whole = json.loads(run_cli("report", path, "--json").stdout)
    _off, size = struct.unpack_from("<QQ", path.read_bytes(), 40)
    short = live_copy(path, tmp_path / "short.data", data_size=size // 3)
    raw = bytearray(short.read_bytes())
    raw[FEATURES_AT:FEATURES_AT + 32] = bytes(32)         # no features flagged
    short.write_bytes(bytes(raw))
    p = run_cli("report", short, "--json")
    assert p.returncode == 0, p.stderr
    assert "ends %d bytes before the file does" % (size - size // 3) in p.stderr.decode()
    assert json.loads(p.stdout)["samples"] == whole["samples"]


@pytest.mark.parametrize("accel", ["1", "0"])
def test_live_file_cut_inside_a_record(tmp_path, accel):
    path, _ = capture("a_per_task")
    live = live_copy(path, tmp_path / "live.data")
    live.write_bytes(live.read_bytes()[:-37])           # perf's last write only half there
    p = cli("report", live, "--json", accel=accel)
    assert p.returncode == 2
    err = p.stderr.decode().splitlines()
    assert "data.size is 0" in err[0] and "offset 0x" in err[-1] and len(err) == 2, err
    d = json.loads(p.stdout)
    assert d["complete"] is False and d["samples"] > 0 and d["conserved"]
    q = cli("report", live, "--json", "-q", accel=accel)      # -q: the error alone
    assert q.returncode == 2 and q.stderr.decode().count("\n") == 1 and q.stdout == p.stdout


def test_finished_file_is_not_warned_about(tmp_path):
    path, _ = capture("a_per_task")
    p = run_cli("report", path)
    assert p.returncode == 0 and p.stderr == b""
