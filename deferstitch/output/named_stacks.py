"""Profiles from named, summed stacks (``{"comm;outer;...;inner": weight}``): what the fleet
writes after its reduction, in the three formats of the single-file commands."""
import gzip
import json

from .. import __version__


def split(line):
    """(comm, [frames root first]) of a folded line's stack."""
    parts = line.split(";")
    return parts[0], parts[1:]


def write_folded(f, lines):
    for key in sorted(lines):
        f.write("%s %d\n" % (key, lines[key]))


def write_speedscope(f, lines, name, unit="none"):
    """speedscope's file format: one "sampled" profile per comm, frames shared, root first."""
    frames, index, profiles = [], {}, {}
    for line in sorted(lines):
        comm, stack = split(line)
        ids = []
        for fr in stack:
            i = index.get(fr)
            if i is None:
                i = index[fr] = len(frames)
                frames.append({"name": fr})
            ids.append(i)
        prof = profiles.setdefault(comm, ([], []))
        prof[0].append(ids)
        prof[1].append(lines[line])
    json.dump({"$schema": "https://www.speedscope.app/file-format-schema.json",
               "shared": {"frames": frames}, "name": name, "exporter": "deferstitch " + __version__,
               "activeProfileIndex": 0,
               "profiles": [{"type": "sampled", "name": comm, "unit": unit, "startValue": 0,
                             "endValue": sum(w), "samples": s, "weights": w}
                            for comm, (s, w) in sorted(profiles.items())]}, f)


def write_pprof(f, lines, unit=("samples", "count")):
    """pprof's profile.proto, gzip'd: a location per distinct frame name (addresses differ from
    host to host), leaf first, a ``thread`` label with the comm."""
    from .pprof_schema import messages
    prof = messages()["Profile"]()
    strings = {"": 0}
    prof.string_table.append("")

    def s(text):
        i = strings.get(text)
        if i is None:
            i = strings[text] = len(prof.string_table)
            prof.string_table.append(text)
        return i
    vt = prof.sample_type.add()
    vt.type, vt.unit = s(unit[0]), s(unit[1])
    locations = {}
    for line in sorted(lines):
        comm, stack = split(line)
        smp = prof.sample.add()
        for fr in reversed(stack):
            lid = locations.get(fr)
            if lid is None:
                fn = prof.function.add()
                fn.id = lid = locations[fr] = len(locations) + 1
                fn.name = fn.system_name = s(fr)
                loc = prof.location.add()
                loc.id = lid
                loc.line.add().function_id = lid
            smp.location_id.append(lid)
        smp.value.append(lines[line])
        lab = smp.label.add()
        lab.key, lab.str = s("thread"), s(comm)
    f.write(gzip.compress(prof.SerializeToString()))
