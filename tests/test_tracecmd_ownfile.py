"""Who opens a trace.dat: our own reader (tracecmd/ownfile.py) wherever our walker reads the
whole file, libtracecmd where the file asks for what is not ours, such as times it shifts (the
OFFSET option of `trace-cmd record --ts-offset`): there the outputs are libtracecmd's, every time
shifted, as on the Python path."""
import os
import re

import tracecmd_synth as S
from conftest import need_built, run_cli
from tracecmd_text import need_trace_cmd

OPTION_OFFSET = 7           # enum tracecmd_option_id: its data an ASCII number (strtoll)
SHIFT = 1000000000          # ns


def _times(text):
    return [round(float(t) * 1e6) for t in re.findall(r" (\d+\.\d{6}): ", text)]


def test_shifted_times_stay_with_libtracecmd(tmp_path):
    from deferstitch.tracecmd import _ffi, ownfile, pages
    need_built("the page reader (deferstitch._tracedat)", pages.available())
    need_trace_cmd()
    from deferstitch.tracecmd.bridge import Trace
    plain = S.deferred(tmp_path / "plain.dat")
    td = S.deferred(None, build=True)
    td.options.append((OPTION_OFFSET, b"%d\0" % SHIFT))
    shifted = td.write(tmp_path / "shifted.dat")
    with Trace(plain) as t:
        assert isinstance(t._file, ownfile.OwnFile)
    with Trace(shifted) as t:
        assert isinstance(t._file, _ffi.Handle)
    out = {}
    for path in (plain, shifted):
        for accel in ("1", "0"):
            p = run_cli("trace", "script", path, env={**os.environ, "DEFERSTITCH_ACCEL": accel})
            assert p.returncode == 0, p.stderr
            out[path.name, accel] = p.stdout.decode()
    assert out["plain.dat", "1"] == out["plain.dat", "0"]
    assert out["shifted.dat", "1"] == out["shifted.dat", "0"]
    before, after = _times(out["plain.dat", "1"]), _times(out["shifted.dat", "1"])
    assert before and [a - b for a, b in zip(after, before)] == [SHIFT // 1000] * len(before)
