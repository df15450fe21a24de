"""--call-graph lbr: the user part of a chain rebuilt from the branch stack, as perf shows it.

perf (machine.c, resolve_lbr_callchain_sample, callee order) keeps the chain up to its
PERF_CONTEXT_USER, then shows the sample's ip and where each call-stack branch came from. Checked
against perf 7.2 on perfparser's real `perf record --call-graph lbr` file (copied in tests/data),
and on files built by tests/synth.py with and without PERF_SAMPLE_BRANCH_HW_INDEX.
"""
import shutil
import subprocess

import pytest

from conftest import DATA, need_sid_perf, run_cli
from perf_text import parse_fields
from synth import Synth, make_attr

from deferstitch.abi import consts as C
from deferstitch.perfdata.reader import PerfData

LBR = DATA / "external" / "perf.lbr.data"
PERF72_TEXT = DATA / "external" / "perf.lbr.data.perf72.txt"

ST = (C.PERF_SAMPLE_IP | C.PERF_SAMPLE_TID | C.PERF_SAMPLE_TIME | C.PERF_SAMPLE_PERIOD
      | C.PERF_SAMPLE_CALLCHAIN | C.PERF_SAMPLE_BRANCH_STACK)
KERNEL = [C.PERF_CONTEXT_KERNEL, 0xffffffff81000010, 0xffffffff81000020]
USER = C.PERF_CONTEXT_USER
BRANCHES = [(0x401100, 0x402000, 0), (0x400800, 0x401000, 0), (0x400500, 0x400700, 0)]


def ips(path):
    r = run_cli("script", path, "--no-symbols")
    assert r.returncode == 0, r.stderr.decode()
    return {k: v[2] for k, v in parse_fields(r.stdout.decode()).items()}


def lbr_file(path, hw_index):
    """Samples of an LBR call-stack event: (kernel + user chain, ip, branches) -> what perf 7.2 shows."""
    bst = 1 | C.PERF_SAMPLE_BRANCH_CALL_STACK | (C.PERF_SAMPLE_BRANCH_HW_INDEX if hw_index else 0)
    f = Synth(attrs=[make_attr(size=128, sample_type=ST, branch_sample_type=bst, defer=False, type_=0)])
    hw = 3 if hw_index else None
    cases = [   # chain, sample ip, branches, perf 7.2's ips
        (KERNEL + [USER, 0x402010], 0xffffffff81000010, BRANCHES,      # kernel kept, leaf = sample ip
         KERNEL[1:] + [0xffffffff81000010, 0x401100, 0x400800, 0x400500]),
        ([USER, 0x402020, 0], 0x402020, BRANCHES[1:], [0x402020, 0x400800, 0x400500]),
        ([USER, 0x402030], 0, BRANCHES, [0x402000, 0x401100, 0x400800, 0x400500]),   # no ip: newest target
        (KERNEL, 0xffffffff81000010, BRANCHES, KERNEL[1:]),           # no user part: the chain as is
        ([USER, 0x402050], 0x402050, [], [0x402050]),
    ]
    for n, (chain, ip, branches, _want) in enumerate(cases):
        f.sample(tid=10, time=1000 * (n + 1), kernel=chain, ip=ip, branches=branches, hw_idx=hw)
    f.round()
    f.save(path)
    return [want for *_x, want in cases]


def test_lbr_file_matches_perf72():
    """perfparser's vector_static_gcc/perf.lbr.data (perf 5.4, USER|CALL_STACK): all 29 samples,
    8 in the kernel with an empty branch stack, 21 rebuilt from the LBR."""
    want = {k: v[2] for k, v in parse_fields(PERF72_TEXT.read_text()).items()}
    assert len(want) == 29
    assert ips(LBR) == want


def test_lbr_file_live_perf72(tmp_path):
    perf = need_sid_perf()
    shutil.copy(LBR, tmp_path / "lbr.data")
    out = subprocess.run([perf, "script", "-i", "./lbr.data", "-F", "comm,tid,time,ip"], cwd=tmp_path,
                         capture_output=True, text=True).stdout
    assert parse_fields(out) == parse_fields(PERF72_TEXT.read_text())


@pytest.mark.parametrize("hw_index", [False, True])
def test_branch_stack_decoded(tmp_path, hw_index):
    """PERF_SAMPLE_BRANCH_STACK with and without hw_idx: entries newest first, hw_idx kept."""
    lbr_file(tmp_path / "l.data", hw_index)
    with PerfData.open(tmp_path / "l.data") as perf:
        lay = perf.evlist.first.layout
        stacks = [lay.parse(r.data).branch_stack for r in perf.records() if r.type == C.PERF_RECORD_SAMPLE]
    assert stacks[0].entries == tuple(BRANCHES)
    assert stacks[1].entries == tuple(BRANCHES[1:])
    assert stacks[4].entries == ()
    assert {s.hw_idx for s in stacks} == ({3} if hw_index else {None})


@pytest.mark.parametrize("hw_index", [False, True])
def test_lbr_rule(tmp_path, hw_index):
    want = lbr_file(tmp_path / "l.data", hw_index)
    assert list(ips(tmp_path / "l.data").values()) == want


@pytest.mark.parametrize("hw_index", [False, True])
def test_lbr_rule_matches_perf72(tmp_path, hw_index):
    perf = need_sid_perf()
    lbr_file(tmp_path / "l.data", hw_index)
    out = subprocess.run([perf, "script", "-i", "./l.data", "-F", "tid,time,ip"], cwd=tmp_path,
                         capture_output=True, text=True).stdout
    want = {k: v[2] for k, v in parse_fields(out).items()}
    assert len(want) == 5 and ips(tmp_path / "l.data") == want


def test_branch_stack_without_call_stack_keeps_chain(tmp_path):
    """Branch stacks of other kinds (-b, ANY) leave the callchain as it is."""
    f = Synth(attrs=[make_attr(size=128, sample_type=ST, branch_sample_type=1 | 8, defer=False, type_=0)])
    f.sample(tid=10, time=1000, kernel=KERNEL + [USER, 0x402010], ip=0x402010, branches=BRANCHES)
    f.round()
    f.save(tmp_path / "b.data")
    assert list(ips(tmp_path / "b.data").values()) == [KERNEL[1:] + [0x402010]]
