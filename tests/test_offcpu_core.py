"""The off-CPU core (deferstitch/offcpu.py) on hand-made streams: each way a wait ends, in time
order, and every switch-out counted once."""
from deferstitch import offcpu as O
from deferstitch.model import STITCHED, UNMATCHED, Sample


def switch(tid, time, stack_time=None, outcome=STITCHED):
    s = Sample(tid, tid, 0, time, (0xffffffff81000000,), 1)
    s.outcome = outcome
    s.stack_time = stack_time
    if outcome == STITCHED:
        s.user = (0x401000,)
    return s


def run(calls, preempted=False):
    got = []
    core = O.OffCpu(got.append, preempted)
    for name, *a in calls:
        getattr(core, name)(*a)
    core.finish()
    assert core.conserved()
    return core, [(iv.tid, iv.start, iv.end, iv.ended) for iv in got]


def test_next_pid_ends_before_the_stack_time():
    _core, got = run([("switch_out", switch(5, 100, stack_time=400), "S"),
                      ("switch_in", 5, 300, O.NEXT_PID)])
    assert got == [(5, 100, 300, O.NEXT_PID)]


def test_the_stack_time_ends_a_wait_no_switch_in_record_ended_first():
    # per task: the only sign is the deferred stack, written as T returned to user space
    _core, got = run([("switch_out", switch(5, 100, stack_time=400), "S"),
                      ("seen", 5, 900)])
    assert got == [(5, 100, 400, O.USER_STACK)]


def test_a_switch_in_record_after_the_stack_time_comes_too_late():
    _core, got = run([("switch_out", switch(5, 100, stack_time=400), "S"),
                      ("switch_in", 5, 450, O.SWITCH_IN)])
    assert got == [(5, 100, 400, O.USER_STACK)]


def test_without_a_stack_time_the_next_sign_of_the_task_is_an_upper_bound():
    _core, got = run([("switch_out", switch(5, 100, outcome=UNMATCHED), "D"),
                      ("seen", 5, 700)])
    assert got == [(5, 100, 700, O.SEEN)]


def test_a_second_switch_out_ends_the_first_wait():
    _core, got = run([("switch_out", switch(5, 100), "S"), ("switch_out", switch(5, 250, 260), "S")])
    assert got == [(5, 100, 250, O.SEEN), (5, 250, 260, O.USER_STACK)]


def test_preemptions_are_counted_apart_unless_asked_for():
    core, got = run([("switch_out", switch(5, 100, 150), "R")])
    assert got == [] and core.skipped_preempted == 1
    core, got = run([("switch_out", switch(5, 100, 150), "R")], preempted=True)
    assert got == [(5, 100, 150, O.USER_STACK)] and core.skipped_preempted == 0


def test_waits_never_ended_are_counted_by_why():
    core, got = run([("switch_out", switch(-1, 100), "X"), ("switch_out", switch(6, 200), "S")])
    assert got == [(-1, 100, None, O.TASK_GONE), (6, 200, None, O.RECORDING_ENDED)]
    assert core.unended == {O.TASK_GONE: 1, O.RECORDING_ENDED: 1}


def test_stack_times_end_waits_in_time_order_across_tasks():
    _core, got = run([("switch_out", switch(5, 100, 500), "S"), ("switch_out", switch(6, 110, 300), "S"),
                      ("switch_in", 5, 450, O.SWITCH_IN), ("advance", 1000)])
    assert got == [(6, 110, 300, O.USER_STACK), (5, 100, 450, O.SWITCH_IN)]


def test_a_sched_switch_format_with_an_integer_of_no_known_size_is_not_read():
    """A damaged format (prev_state of 16 bytes) is refused where it is read, as a format
    without the fields: never a KeyError later, on each sample."""
    from deferstitch.perfdata.sched import SchedSwitch
    from deferstitch.tracecmd.formats import FieldDesc

    def field(name, off, size):
        return FieldDesc(name, "int", off, size, 0, size, 0)
    good = [field("prev_comm", 8, 16), field("prev_pid", 24, 4), field("prev_state", 32, 8),
            field("next_pid", 56, 4)]
    assert SchedSwitch.of_format(good, b"", "<") is not None
    assert SchedSwitch.of_format(good[:2] + [field("prev_state", 32, 16)] + good[3:], b"", "<") is None
