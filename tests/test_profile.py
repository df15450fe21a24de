"""output/profile.py, the model of counted stacks that the single file's pprof and the fleet's
both fill: equal samples merge, values saturate, and what it writes is what google/pprof's own
profile.proto reads back (through protobuf, tests/google_pprof.py)."""
from google_pprof import read_profile

from deferstitch.output import pprof_wire as W
from deferstitch.output.pprof import from_folded
from deferstitch.output.profile import Profile


def _names(prof):
    fn = {f.id: prof.string_table[f.name] for f in prof.function}
    return {loc.id: [fn[line.function_id] for line in loc.line] for loc in prof.location}


def test_equal_samples_merge_and_values_saturate(tmp_path):
    p = Profile((("samples", "count"), ("cpu", "nanoseconds")), ("cpu", "nanoseconds"), tids=True)
    main = p.location("main", p.mapping("/bin/a"), 0x1000, p.function("main", "/bin/a"))
    work = p.location("work", p.mapping("/bin/a"), 0x1010, p.function("work", "/bin/a"),
                      [p.function("inlined", "/bin/a")])
    stack = p.stack(W.packed([work, main]))
    labels = p.labels("a", (("thread", "a"), ("reason", None)))
    p.add(stack, labels, 7, (1, 1 << 63))
    p.add(stack, labels, 7, (2, 1 << 63))         # the same sample: summed, the sum saturated
    p.add(stack, labels, None, (4, 5))            # another thread (none known): its own
    p.add(p.outer(stack, main), labels, 7, (8, 9))
    p.times(100, 250)
    with open(tmp_path / "p.pb.gz", "wb") as f:
        p.write(f)
    prof = read_profile(tmp_path / "p.pb.gz")
    s = prof.string_table
    assert s[0] == "" and [(s[t.type], s[t.unit]) for t in prof.sample_type] == \
        [("samples", "count"), ("cpu", "nanoseconds")]
    assert (s[prof.period_type.type], prof.duration_nanos) == ("cpu", 150)
    names = _names(prof)
    assert names[work] == ["inlined", "work"] and len(prof.mapping) == 1
    got = [([n for i in smp.location_id for n in names[i]], list(smp.value),
            {s[l.key]: (s[l.str] if l.str else l.num) for l in smp.label}) for smp in prof.sample]
    assert got == [(["inlined", "work", "main"], [3, W.INT64_MAX], {"thread": "a", "tid": 7}),
                   (["inlined", "work", "main"], [4, 5], {"thread": "a", "tid": -1}),
                   (["inlined", "work", "main", "main"], [8, 9], {"thread": "a", "tid": 7})]


def test_the_fleets_profile_is_its_named_stacks(tmp_path):
    lines = {"b c;main;work": 3, "a;main": 2, "a;main;work;leaf": 5}
    with open(tmp_path / "f.pb.gz", "wb") as f:
        from_folded(lines, ("cpu", "nanoseconds")).write(f)
    prof = read_profile(tmp_path / "f.pb.gz")
    s, names = prof.string_table, _names(prof)
    assert [(s[t.type], s[t.unit]) for t in prof.sample_type] == [("cpu", "nanoseconds")]
    got = {";".join([s[smp.label[0].str]] + [names[i][0] for i in reversed(smp.location_id)]):
           list(smp.value) for smp in prof.sample}
    assert got == {k: [v] for k, v in lines.items()}
    assert not prof.mapping and all(loc.address == 0 for loc in prof.location)
