"""The kallsyms reader's twins: symbols/kallsyms.py columns() (the definition) and
_accel.kallsyms_columns give the same symbols in the same order, and Kallsyms names every
address alike either way, on the guest's real kallsyms and on lines that bend the rules."""
import lzma
import os
import random

import pytest

from conftest import CAPTURES, need_built
from deferstitch.symbols import kallsyms as K

try:
    from deferstitch import _accel
except ImportError:
    _accel = None

ODD = (b"ffffffff81000000 T _text\n"
       b"ffffffff81000000 T startup_64\n"
       b"ffffffff81000000 t _stext\n"                      # three at one address: one wins
       b"ffffffff81000010 W weak_one\n"
       b"ffffffff81000020 w weak_local\r\n"                 # CRLF: \r is white space
       b"ffffffff81000030 t loc\xe9al\n"                    # not UTF-8: replaced
       b"ffffffff81000040 A abs_symbol\n"                   # type A: left out
       b"ffffffff81000048 TW two_letters\n"                 # a type of two letters: left out
       b"1ffffffff81000050 T too_long_address\n"            # 17 digits: passed over
       b"0xffffffff81000060 T prefixed\n"                   # not hex digits alone: passed over
       b"ffffffff81000070 T\n"                              # too few fields
       b"ffffffff81000080 D data_sym\n"
       b"ffffffff81000090 B bss_sym\n"
       b"   ffffffff810000a0\tT  spaced  \n"
       b"ffffffffc0001000 t modfn\t[mod_a]\n"
       b"ffffffffc0000800 T modfirst\t[mod_a]\n"            # out of order in its module
       b"ffffffffc0002000 t other\t[[mod_b]]\n"             # strip("[]") strips every bracket
       b"ffffffffc0003000 t notmod\tmod_c]\n"               # no "[": the kernel's
       b"ffffffff81000000 T _text\n"                        # _text again: the first counts
       b"\n\xff\xfe garbage\n")


def twins(data):
    if _accel is None or not hasattr(_accel, "kallsyms_columns"):
        need_built("the C engine (deferstitch._accel)", False)
    py = K.columns(data)
    c = K._c_columns(data)
    assert c is not None
    return py, c


def same(py, c):
    assert py[0] == c[0]
    assert [g[0] for g in py[1]] == [g[0] for g in c[1]]
    for (m, starts, binds, names), (_m, cs, cb, cn) in zip(py[1], c[1]):
        assert list(starts) == list(cs), m
        assert bytes(binds) == bytes(cb), m
        assert list(names) == [cn[i] for i in range(len(cn))], m


def test_the_twins_agree_on_lines_that_bend_the_rules():
    py, c = twins(ODD)
    same(py, c)
    assert py[0] == 0xffffffff81000000
    groups = {m: names for m, _s, _b, names in py[1]}
    assert set(groups) == {None, "mod_a", "mod_b"}
    assert groups["mod_a"] == ["modfirst", "modfn"]         # sorted by address
    kernel = groups[None]
    assert "abs_symbol" not in kernel and "two_letters" not in kernel and "prefixed" not in kernel
    assert "loc\ufffdal" in kernel and "spaced" in kernel and "notmod" in kernel


def test_the_twins_agree_on_the_real_kallsyms():
    data = lzma.decompress((CAPTURES / "kallsyms.xz").read_bytes())
    py, c = twins(data)
    same(py, c)
    assert sum(len(g[1]) for g in py[1]) > 150_000


def test_kallsyms_names_every_address_alike_either_way(tmp_path, monkeypatch):
    path = tmp_path / "kallsyms"
    path.write_bytes(lzma.decompress((CAPTURES / "kallsyms.xz").read_bytes()) + ODD)
    twins(b"")
    fast = K.Kallsyms(path)
    monkeypatch.setenv("DEFERSTITCH_ACCEL", "0")
    slow = K.Kallsyms(path)
    assert fast.text == slow.text
    starts = list(slow.kernel.starts)
    rnd = random.Random(7)
    probe = starts[::3] + [s + rnd.randrange(1, 200) for s in starts[::11]] + [0, 1 << 63, (1 << 64) - 1]
    assert [fast.find(a) for a in probe] == [slow.find(a) for a in probe]
    for m, table in slow.modules.items():
        assert [fast.find(s + 1, m) for s in table.starts] == [slow.find(s + 1, m) for s in table.starts]
    fast.relocate(fast.text + 0x1000)
    slow.relocate(slow.text + 0x1000)
    assert [fast.find(a + 0x1000) for a in probe[:500]] == [slow.find(a + 0x1000) for a in probe[:500]]
