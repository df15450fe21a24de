"""perf script's ``-F``: which fields a sample's text shows, chosen by perf's own rules
(tools/perf/builtin-script.c: all_output_options, the output[] defaults per event type,
parse_output_fields, perf_session__check_output_opt with evsel__check_attr, process_attr).

    -F comm,tid,time,ip,sym      these fields, for every event type they are valid for
    -F +period / -F -dso         added to / taken from the defaults (a list is all +/-, or none)
    -F sw:comm,ip  -F trace:...  for one event type (hw, sw, trace, raw, break, synth)

The fields of an event type are decided once, by the first event of that type in the file, as
perf decides them: a field the samples do not carry is dropped from the defaults silently, and
is an error when asked for by name. perf prints a sample as (process_event)

    [comm] [pid/tid] [[cpu]] [time:] [period] [event:] [trace] ip-part
    ip-part: with a callchain, "\\n" then one frame a line "\\t%16lx [sym[+0xoff]] [(dso)]";
             without, " %16lx [sym[+0xoff]] [(dso)]" (the sample's own ip); then "\\n"

comm is padded to 16 unless the line shows a callchain (ip printed, the event samples one).
A pipe is read as perf reads one: each attr as it comes adds ip and sym when a callchain is
sampled, unless the list took them away (process_attr).
"""
from ..abi import consts as C
from ..errors import DeferstitchError

# all_output_options, in perf's order (perf 7.2); PRINTED: the ones deferstitch prints
NAMES = ("comm", "tid", "pid", "time", "cpu", "event", "trace", "ip", "sym", "dso", "dsoff",
         "addr", "symoff", "srcline", "period", "iregs", "uregs", "brstack", "brstacksym",
         "data_src", "weight", "bpf-output", "callindent", "insn", "disasm", "insnlen",
         "brstackinsn", "brstackoff", "synth", "phys_addr", "metric", "misc", "srccode", "ipc",
         "tod", "data_page_size", "code_page_size", "ins_lat", "brstackinsnlen", "machine_pid",
         "vcpu", "cgroup", "retire_lat", "brstackdisasm", "brcntr")
PRINTED = frozenset(("comm", "tid", "pid", "time", "cpu", "event", "trace", "ip", "sym", "dso",
                     "symoff", "period"))

# output types: PERF_TYPE_* below PERF_TYPE_MAX, then OUTPUT_TYPE_SYNTH and OUTPUT_TYPE_OTHER
HW, SW, TRACEPOINT, HW_CACHE, RAW, BREAKPOINT, SYNTH, OTHER = range(8)
PERF_TYPE_MAX = 6
PERF_TYPE_SYNTH = 0x80000000           # perf's synthesized events (util/event.h)
PREFIXES = {"hw": HW, "sw": SW, "trace": TRACEPOINT, "raw": RAW, "break": BREAKPOINT,
            "synth": SYNTH}
EVENT_TYPES = {HW: "hardware", SW: "software", TRACEPOINT: "tracepoint",
               HW_CACHE: "hardware-cache"}             # util/event.c event_type(); else "unknown"

_IP_SET = {"comm", "tid", "cpu", "time", "event", "ip", "sym", "symoff", "dso", "period"}
DEFAULTS = {HW: _IP_SET, SW: _IP_SET | {"bpf-output"},
            TRACEPOINT: {"comm", "tid", "cpu", "time", "event", "trace"},
            HW_CACHE: _IP_SET,
            RAW: _IP_SET | {"addr", "data_src", "weight", "phys_addr", "data_page_size",
                            "code_page_size", "ins_lat", "retire_lat"},
            BREAKPOINT: _IP_SET, SYNTH: (_IP_SET - {"period"}) | {"synth"}, OTHER: _IP_SET}
INVALID = {HW: {"trace", "bpf-output"}, SW: {"trace"}, TRACEPOINT: set(),
           HW_CACHE: {"trace", "bpf-output"}, RAW: {"trace", "bpf-output"},
           BREAKPOINT: {"trace", "bpf-output"}, SYNTH: {"trace", "bpf-output"},
           OTHER: {"trace", "bpf-output"}}


def output_type(attr_type):
    """output_type(): the output[] slot of an attr type."""
    if attr_type == PERF_TYPE_SYNTH:
        return SYNTH
    return attr_type if attr_type < PERF_TYPE_MAX else OTHER


def event_type(t):
    return EVENT_TYPES.get(t, "unknown")


class FieldsError(DeferstitchError):
    """A -F that perf refuses, in perf's words."""


class _Output:
    """One slot of perf's output[]."""

    def __init__(self, t):
        self.fields = set(DEFAULTS[t])
        self.user_set = False
        self.user_set_fields = set()
        self.user_unset_fields = set()


class Request:
    """The -F options as parse_output_fields leaves output[]: ``parse(arg)`` per -F, in order."""

    def __init__(self):
        self.out = {t: _Output(t) for t in range(OTHER + 1)}

    def parse(self, arg):
        """parse_output_fields() of one -F argument; FieldsError with perf's line."""
        out = self.out
        ty = None
        tok = arg
        if ":" in arg:
            prefix, tok = arg.split(":", 1)
            if prefix not in PREFIXES:
                raise FieldsError("Invalid event type in field string.")
            ty = PREFIXES[prefix]
            if "+" not in tok and "-" not in tok:       # don't override defaults for +-
                out[ty].fields = set()
                out[ty].user_set = True
        else:
            if not arg:
                raise FieldsError("Cannot set fields to 'none' for all event types.")
            if "+" not in arg and "-" not in arg:
                for o in out.values():
                    o.fields = set()
                    o.user_set = True
        change = None                                   # None: DEFAULT, else "set", "+", "-"
        for name in (t for t in tok.split(",") if t):   # strtok: empty tokens vanish
            if name[0] in "+-":
                if change == "set":
                    raise FieldsError("Cannot mix +-field with overridden fields")
                change, name = name[0], name[1:]
            else:
                if change not in (None, "set"):
                    raise FieldsError("Cannot mix +-field with overridden fields")
                change = "set"
            if name == "flags":
                if change != "-":
                    raise FieldsError("flags: a field perf knows that deferstitch does not print")
                continue
            if name not in NAMES:
                raise FieldsError("Invalid field requested.")
            if name not in PRINTED and change != "-":
                raise FieldsError("%s: a field perf knows that deferstitch does not print "
                                  "(it prints %s)" % (name, ",".join(n for n in NAMES if n in PRINTED)))
            for t in ([ty] if ty is not None else list(out)):
                o = out[t]
                if name in INVALID[t]:
                    if ty is not None:
                        raise FieldsError("'%s' not valid for %s events." % (name, event_type(t)))
                    continue                            # perf warns "... Ignoring."
                if change == "-":
                    o.fields.discard(name)
                    if ty is None:
                        o.user_set_fields.discard(name)
                        o.user_unset_fields.add(name)
                else:
                    o.fields.add(name)
                    if ty is None:
                        o.user_set_fields.add(name)
                        o.user_unset_fields.discard(name)
                o.user_set = True

    @classmethod
    def of(cls, specs):
        """The Request of the -F options ``specs``; FieldsError names the option perf refuses."""
        req = cls()
        for spec in specs:
            try:
                req.parse(spec)
            except FieldsError as err:
                raise FieldsError("-F %s: %s" % (spec, err)) from None
        return req

    def prints_trace(self, perf):
        """Whether tracepoint samples of ``perf`` show their trace text."""
        return "trace" in self.out[TRACEPOINT].fields and any(
            e.attr.type == TRACEPOINT for e in perf.evlist.entries)


class Layout:
    """What one event's samples show: ``fields``, ``comm_wide`` (comm padded to 16),
    ``chain`` (frames one a line) and the frame options ``sym``, ``symoff``, ``dso``."""

    def __init__(self, fields, chain, ns):
        self.fields = frozenset(fields)
        self.chain = chain
        self.ns = ns
        ip = "ip" in self.fields
        self.comm_wide = not (ip and chain)
        self.frames = (("sym" in self.fields), ("symoff" in self.fields), ("dso" in self.fields))


def _check_attr(o, entry, allow_user_set=False):
    """evsel__check_attr() for the first event of an output type: drops what its samples lack
    from the defaults, and refuses what was asked for by name."""
    st = entry.attr.sample_type
    f = o.fields

    def stype(bit, msg, names, allow=False):
        if st & bit:
            return
        if o.user_set_fields & set(names):
            if allow:
                return
            shown = names[0] if len(names) == 1 else ""      # output_field2str of TID|PID: ""
            raise FieldsError("Samples for '%s' event do not have %s attribute set. Cannot print "
                              "'%s' field." % (entry.name, msg, shown))
        f.difference_update(names)
    if "ip" in f:
        stype(C.PERF_SAMPLE_IP, "IP", ("ip",))
    if "sym" in f and not st & (C.PERF_SAMPLE_IP | C.PERF_SAMPLE_ADDR):
        raise FieldsError("Display of symbols requested but neither sample IP nor sample address "
                          "available. Hence, no addresses to convert to symbols.")
    if "symoff" in f and "sym" not in f:
        raise FieldsError("Display of offsets requested but symbol is notselected.")
    if "dso" in f and not st & (C.PERF_SAMPLE_IP | C.PERF_SAMPLE_ADDR):
        raise FieldsError("Display of DSO requested but no address to convert.")
    if "pid" in f or "tid" in f:
        stype(C.PERF_SAMPLE_TID, "TID", ("tid", "pid"))
    if "time" in f:
        stype(C.PERF_SAMPLE_TIME, "TIME", ("time",))
    if "cpu" in f:
        stype(C.PERF_SAMPLE_CPU, "CPU", ("cpu",), allow_user_set)


def request(specs):
    """Request.of(specs)."""
    return Request.of(specs)


def default_request():
    """What ``script`` shows without -F: perf's default for hardware and software events, for
    every event (a tracepoint's too, as deferstitch always printed it: its trace text only
    with -F)."""
    req = Request()
    req.out[TRACEPOINT].fields = set(DEFAULTS[SW]) - {"bpf-output"}
    return req


def _is_dummy(e):
    return e.attr.type == C.PERF_TYPE_SOFTWARE and e.attr.config == C.PERF_COUNT_SW_DUMMY


def _copy(o):
    c = _Output(SW)
    c.fields, c.user_set = set(o.fields), o.user_set
    c.user_set_fields, c.user_unset_fields = set(o.user_set_fields), set(o.user_unset_fields)
    return c


def layouts(request, perf, ns=False, per_entry=False):
    """[Layout per perf.evlist.entries], as perf_session__check_output_opt (a file) or
    process_attr (a pipe) leaves output[]; FieldsError in perf's words. ``per_entry``: the layout
    without -F, as deferstitch always printed it: each event's [cpu] when its samples carry it,
    the rest shown as far as the sample has it."""
    entries = perf.evlist.entries
    out = {t: _copy(o) for t, o in request.out.items()}
    callchains = any(e.layout.has_callchain for e in entries)
    allow = bool(getattr(perf, "auxtrace", None))       # HEADER_AUXTRACE: allow_user_set
    firsts = {}
    for e in entries:
        if not _is_dummy(e):
            firsts.setdefault(output_type(e.attr.type), e)
    for t, e in firsts.items():
        if out[t].fields and not per_entry:
            _check_attr(out[t], e, allow)
    if perf.pipe:
        # process_attr: each attr with a callchain (combined) adds ip and sym unless taken away
        if callchains:
            for t in firsts:
                for name in ("ip", "sym"):
                    if name not in out[t].user_unset_fields:
                        out[t].fields.add(name)
    elif callchains and not out[TRACEPOINT].user_set:
        if any(e.attr.type == TRACEPOINT and e.layout.has_callchain for e in entries):
            out[TRACEPOINT].fields |= {"ip", "sym", "symoff", "dso"}
    lays = []
    for e in entries:
        o = out[output_type(e.attr.type)]
        if per_entry and not e.attr.sample_type & C.PERF_SAMPLE_CPU:
            o = _copy(o)                # the default: what it always showed, [cpu] when sampled
            o.fields.discard("cpu")
        lays.append(Layout(o.fields, e.layout.has_callchain and callchains, ns))
    return lays
