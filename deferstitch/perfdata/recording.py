"""Several files read as one recording: a `perf record --threads` directory, a `--switch-output`
sequence.

    open_input(["perf.data"])                    one file (or -): a PerfData, today's answer
    open_input(["threads.data"])                 a --threads directory: its header file `data`
                                                 and every `data.N`, sorted as one
    open_input(["sw.data.2026...", ...])         a --switch-output sequence (several files, a
    open_input(["swdir"]), (["sw.data.*"])       directory or a glob of them): one recording,
                                                 each file's records after the last's

Both give an object that reads as a PerfData to the feed and the outputs (``evlist``,
``features``, ``records()``, ``ahead()``): a ``Recording``.

**A --threads directory** (perf record --threads, perf 5.17+): `NAME/data` is a perf.data whose
header holds every attr and the HEADER_DIR_FORMAT feature (u64 version, PERF_DIR_VERSION = 1)
and whose data section holds what perf itself synthesized; each `NAME/data.N` (every regular
file whose name starts with "data.", util/data.c perf_data__open_dir) is a bare stream of records,
no header, written by one of perf's reader threads. perf writes no FINISHED_ROUND in directory
mode ("per-cpu maps and files have data sorted by kernel", builtin-record.c
record__mmap_read_evlist) and reads the files together into one time-ordered queue, flushed at
the end (session.c __perf_session__process_dir_events). Here the files are read one after the
other (`data`, then data.0, data.1, ...) into the one sorter, which sorts them whole (sorter.py:
no rounds), equal times in that order; the C engine reads them so too. The sorter holds up to
``max_queued`` records per stream before it flushes the oldest half (counted in the report).

**A --switch-output sequence** (`NAME.YYYYMMDDHHMMSScc`, centiseconds last: builtin-record.c
record__switch_output): whole perf.data files, each holding what was read from the ring
buffers between two switches. A sample at the end of one file may have its deferred user stack
in the next, and the later files hold no COMM or MMAP of the tasks already running
(record__synthesize at a switch writes nothing unless --tail-synthesize). Read as one
recording, the records of each file follow the previous file's through the one sorter and the
one stitcher: pending samples, comms and maps carry across every boundary. The files must hold
the same events (attrs and ids): a file of another recording is refused, naming it.

The C engine reads the files in turn as the Python path does (engine.EngineRun.chunks;
Engine.boundary marks where each file of a sequence ends, for the count of samples stitched
across a boundary).
"""
import contextlib
import errno
import glob
import itertools
import os
import re

from ..abi import consts as C
from ..errors import FormatError
from .reader import PerfData, Stream
from .sorter import DEFAULT_MAX_QUEUED

HEADER_DIR_FORMAT = C.FEATURE_IDS["DIR_FORMAT"]
PERF_DIR_VERSION = 1            # util/data.h enum perf_dir_version
_SWITCHED = re.compile(r"\.\d{16}$")   # NAME.YYYYMMDDHHMMSScc: util.c fetch_current_timestamp
_STREAM = re.compile(r"^data\.\d+$")


def open_input(paths):
    """The input of a command: one path (a file, '-', a --threads directory, a directory or a
    glob of --switch-output files) or several files of one sequence. Errors are one line."""
    if len(paths) == 1 and paths[0] != "-" and not os.path.isdir(paths[0]) \
            and not (glob.has_magic(paths[0]) and not os.path.exists(paths[0])):
        return _one_file(paths[0])
    if len(paths) == 1 and paths[0] == "-":
        return PerfData.open("-")
    if len(paths) == 1 and os.path.isdir(paths[0]) \
            and os.path.isfile(os.path.join(paths[0], "data")):
        return ThreadsDir(paths[0])
    files = expand(paths)
    if len(files) == 1:
        return _one_file(files[0])
    return Sequence(files, " ".join(paths))


def recordings_in(root, names):
    """The inputs among the files ``names`` of directory ``root``, each recording once (for the
    fleet, which reads a directory's files one input each): the directory itself when it is a
    --threads directory (`data` and `data.N`), a glob of each --switch-output recording's files
    (NAME.<timestamp>, two or more of one NAME: one perf record run, so one host), every other
    file on its own."""
    if "data" in names and any(_STREAM.match(n) for n in names):
        return [root]
    runs = {}
    for n in names:
        if _SWITCHED.search(n):
            runs.setdefault(n[:-16], []).append(n)
    out = []
    for n in sorted(names):
        stem = n[:-16] if _SWITCHED.search(n) else None
        if stem is None or len(runs[stem]) == 1:
            out.append(os.path.join(root, n))
        elif runs[stem][0] == n:
            out.append(os.path.join(glob.escape(root), glob.escape(stem) + "[0-9]" * 16))
    return out


def input_files(perf):
    """Every file an input reads (for outputs that must not overwrite one): '-' for a pipe."""
    parts = getattr(perf, "parts", None) or [perf]
    return ["-" if p.path == "<stdin>" else p.path for p in parts]


def expand(paths):
    """The files of a sequence: each path as given, a directory's --switch-output files (or all
    its regular files when none is named so), a glob's matches; in time order when every name
    ends in perf's timestamp, else as given."""
    files = []
    for p in paths:
        if p == "-":
            raise FormatError("standard input", None, "a pipe cannot be one of several inputs")
        if os.path.isdir(p):
            inside = sorted(os.path.join(p, f) for f in os.listdir(p)
                            if os.path.isfile(os.path.join(p, f)))
            switched = [f for f in inside if _SWITCHED.search(f)]
            found = switched or inside
            if not found:               # nothing to read: as for any other directory
                raise FormatError(p, None, os.strerror(errno.EISDIR))
            files.extend(found)
        elif glob.has_magic(p) and not os.path.exists(p):
            found = sorted(f for f in glob.glob(p) if os.path.isfile(f))
            if not found:
                raise FormatError(p, None, "no file matches")
            files.extend(found)
        else:
            files.append(p)
    if all(_SWITCHED.search(f) for f in files):
        files.sort(key=lambda f: (f[-16:], f))
    return files


def _one_file(path):
    """One perf.data file; a part of a --threads directory given alone says what it is."""
    parent = os.path.dirname(os.path.abspath(path))
    header = os.path.join(parent, "data")
    if _STREAM.match(os.path.basename(path)) and os.path.isfile(header) and not _is_perf(path):
        raise FormatError(path, None, "one stream of the perf record --threads directory %s "
                          "(records without a header): give the directory %s instead"
                          % (_shown(parent, path), _shown(parent, path)))
    perf = PerfData.open(path)
    if os.path.basename(path) == "data" and HEADER_DIR_FORMAT in perf.features:
        perf.close()
        raise FormatError(path, None, "the header file of the perf record --threads directory "
                          "%s: its samples are in the data.N beside it; give the directory %s "
                          "instead" % (_shown(parent, path), _shown(parent, path)))
    return perf


def _shown(parent, path):
    """The directory as the user would type it: relative when the file was given so."""
    given = os.path.dirname(path)
    return given if given and not os.path.isabs(path) else parent


def _is_perf(path):
    try:
        with open(path, "rb") as f:
            return f.read(8) in (b"PERFILE2", b"2ELIFREP", b"PERFFILE")
    except OSError:
        return False


class Recording:
    """Several readers read as one PerfData (see the module docstring): the metadata of the
    first part (``base``), the records of all. Attributes not set here are the base's."""

    def __init__(self, parts, path):
        self.parts, self.base, self.path = parts, parts[0], path
        self.layouts_ahead = {}
        self.max_queued = DEFAULT_MAX_QUEUED    # what the sorter holds at most (sorter.py)
        self.boundaries = None      # a sequence's: the latest record time at each file's end

    def __getattr__(self, name):    # evlist, endian, header, pipe, tracing, warning, ...
        return getattr(self.base, name)

    def close(self):
        for p in self.parts:
            p.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def auxtrace(self):
        return self.base.auxtrace

    def feature(self, bit):
        return PerfData.feature(self, bit)

    def sample_times(self):
        return PerfData.sample_times(self)      # of this recording's features

    def records(self):
        """Every part's records, one part after the other, as they are: the feed's one sorter
        puts them in time order (a --threads directory's streams have no FINISHED_ROUND: it
        sorts them whole, as perf's one queue does; equal times in the parts' order)."""
        for p in self.parts:
            yield from p.records()

    def ahead(self, max_bytes=None):
        """PerfData.ahead() of every part, their records one after the other (the layout)."""
        return _chained_ahead(self.parts)


class ThreadsDir(Recording):
    """A `perf record --threads` directory: `data` (header, attrs, features, perf's own records)
    and the headerless streams `data.N`, read in turn and sorted as one (Recording.records)."""

    def __init__(self, path):
        head = os.path.join(path, "data")
        base = PerfData.open(head)
        raw = base.features.get(HEADER_DIR_FORMAT)
        if raw is None:
            base.close()
            raise FormatError(head, None, "a directory whose `data` has no HEADER_DIR_FORMAT "
                              "feature: not written by perf record --threads")
        version = int.from_bytes(raw[:8], "little" if base.endian == "<" else "big")
        if version != PERF_DIR_VERSION:
            base.close()
            raise FormatError(head, None, "HEADER_DIR_FORMAT version %d (perf reads %d only)"
                              % (version, PERF_DIR_VERSION))
        names = sorted((f for f in os.listdir(path) if f.startswith("data.")
                        and os.path.isfile(os.path.join(path, f))),
                       key=lambda f: (not f[5:].isdigit(), int(f[5:]) if f[5:].isdigit() else 0, f))
        streams = [_stream(base, os.path.join(path, f)) for f in names
                   if os.path.getsize(os.path.join(path, f))]       # perf skips empty ones
        super().__init__([base] + streams, path)
        self.features = {b: v for b, v in base.features.items() if b != HEADER_DIR_FORMAT}
        self.max_queued = DEFAULT_MAX_QUEUED * len(streams or [base])   # each stream's share


class Sequence(Recording):
    """A `--switch-output` sequence: whole perf.data files of one recording, in order."""

    def __init__(self, files, path):
        parts = []
        try:
            for f in files:
                parts.append(_one_file(f))
                if parts[-1].pipe:
                    raise FormatError(f, None, "a pipe-mode perf.data cannot be part of a "
                                      "sequence (perf record --switch-output writes files)")
                if _events(parts[-1]) != _events(parts[0]):
                    raise FormatError(f, None, "not of the same recording as %s: its events "
                                      "(attrs and ids) differ" % parts[0].path)
        except BaseException:
            for p in parts:
                p.close()
            raise
        super().__init__(parts, path)
        self.features = _features(parts)
        self.boundaries = []

    def records(self):
        """The files' records one after the other; ``boundaries`` gets, at the end of each file
        but the last, the latest record time read so far: a sample at or before it stitched
        with a stack after it crossed into a later file (PerfFeed counts it:
        ``stitched_across_files``; the C engine's Engine.boundary the same)."""
        time_of = self.evlist.time_of
        self.boundaries.clear()         # (the feed holds this list)
        latest = 0                      # as the C engine's sorter keeps it (max_time)
        for n, p in enumerate(self.parts):
            for rec in p.records():
                t = time_of(rec)
                if t is not None and t > latest:
                    latest = t
                yield rec
            if n < len(self.parts) - 1:
                self.boundaries.append(latest)


def _events(perf):
    return [(bytes(e.attr.raw), tuple(e.ids)) for e in perf.evlist.entries]


def _features(parts):
    """The first file's features; BUILD_ID lists the DSOs of every file (each file names those
    its own samples hit), each once."""
    feats = dict(parts[0].features)
    bit = C.HEADER_BUILD_ID
    blobs = [p.features[bit] for p in parts if p.features.get(bit)]
    if len(blobs) > 1:
        feats[bit] = _merge_build_ids(blobs, parts[0].endian)
    return feats


def _merge_build_ids(blobs, endian):
    """BUILD_ID sections joined: each build_id_event (u32 type, u16 misc, u16 size, ...) once."""
    seen, out = set(), []
    for blob in blobs:
        pos = 0
        while pos + 8 <= len(blob):
            size = int.from_bytes(blob[pos + 6:pos + 8], "little" if endian == "<" else "big")
            if size < 8 or pos + size > len(blob):
                break
            ev = bytes(blob[pos:pos + size])
            if ev not in seen:
                seen.add(ev)
                out.append(ev)
            pos += size
    return b"".join(out)


def _stream(base, path):
    """A headerless `data.N` read as records with the header file's attrs (its metadata records,
    if any, noted into the same evlist)."""
    try:
        f = open(path, "rb")
    except OSError as err:
        raise FormatError(path, None, err.strerror or str(err)) from None
    part = PerfData.__new__(PerfData)
    part.path, part._f, part.stream = path, f, Stream(f, path)
    part.endian, part.evlist, part.features = base.endian, base.evlist, base.features
    part.version, part.pipe, part.header, part.tracing = base.version, False, base.header, base.tracing
    part.feature_error = part.warning = part.features_end = None
    part.auxtrace, part.layouts_ahead = base.auxtrace, {}
    part.data_start, part.data_end = 0, part.stream.size
    part._meta_after_data = False
    return part


@contextlib.contextmanager
def _chained_ahead(parts):
    """PerfData.ahead() of every part, their records one after the other (for the layout)."""
    with contextlib.ExitStack() as stack:
        gens = [stack.enter_context(p.ahead()) for p in parts]
        yield itertools.chain.from_iterable(gens)
