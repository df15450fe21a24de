"""Profiles from named, summed stacks (``{"comm;outer;...;inner": weight}``): what the fleet
writes after its reduction, in the three formats of the single-file commands."""
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
    host to host), leaf first, a ``thread`` label with the comm (written as pprof.py does:
    pprof_wire.py)."""
    from . import pprof_wire as W
    strings, table = {}, []

    def s(text):
        i = strings.get(text)
        if i is None:
            i = strings[text] = len(table)
            table.append(W.string(text))
        return i
    s("")
    out = W.GzipProfile(f)
    out.write(W.field(W.SAMPLE_TYPE, W.value_type(s(unit[0]), s(unit[1]))))
    locations, functions = {}, []
    for line in sorted(lines):
        comm, stack = split(line)
        ids = []
        for fr in reversed(stack):
            lid = locations.get(fr)
            if lid is None:
                lid = locations[fr] = len(locations) + 1
                name = s(fr)
                functions.append((lid, name))
            ids.append(lid)
        out.write(W.sample(W.locations_field(W.packed(ids)), W.values_field((lines[line],)),
                           W.label(s("thread"), s(comm))))
    for lid, _name in functions:
        out.write(W.location(lid, 0, 0, lid))
    for lid, name in functions:
        out.write(W.function(lid, name, name, 0))
    for data in table:
        out.write(data)
    out.close()
