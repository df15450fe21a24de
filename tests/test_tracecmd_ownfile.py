"""Who reads a trace.dat: our own reader (tracecmd/ownfile.py), always; the C walker unless the
file shifts its times (the OFFSET option of `trace-cmd record --ts-offset`): then walk.py's,
every time shifted, the same outputs on both paths."""
import os
import re

import tracecmd_synth as S
from conftest import need_built, run_cli

OPTION_OFFSET = 7           # enum tracecmd_option_id: its data an ASCII number (strtoll)
SHIFT = 1000000000          # ns


def _times(text):
    return [round(float(t) * 1e6) for t in re.findall(r" (\d+\.\d{6}): ", text)]


def test_shifted_times_are_read_by_the_python_walker(tmp_path):
    from deferstitch.tracecmd import ownfile, pages
    need_built("the page reader (deferstitch._tracedat)", pages.available())
    from deferstitch.tracecmd.bridge import Trace
    plain = S.deferred(tmp_path / "plain.dat")
    td = S.deferred(None, build=True)
    td.options.append((OPTION_OFFSET, b"%d\0" % SHIFT))
    shifted = td.write(tmp_path / "shifted.dat")
    with Trace(plain) as t:
        assert isinstance(t._file, ownfile.OwnFile) and t._file.clock is None
        assert all(pages.is_c_walker(h.walker) for h in t.handles.values())
    with Trace(shifted) as t:
        assert t._file.clock is not None
        assert not any(pages.is_c_walker(h.walker) for h in t.handles.values())
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
