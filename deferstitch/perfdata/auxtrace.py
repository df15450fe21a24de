"""AUX area traces (Intel PT, CoreSight ETM, Arm SPE, ...): counted as they pass, never decoded.

perf decodes the trace that PERF_RECORD_AUXTRACE records carry and synthesizes samples from it
(``perf script`` does it by default for Intel PT: ``--itrace``); deferstitch does not, so those
samples are absent from everything it writes, while the recorded samples pass through. The reader
notes both record types (Python path and C engine alike), so the report can count them and the
command can say so in one line.
"""
from ..abi import consts as C
from ..abi import records as R


class AuxTrace:
    """What a perf.data's AUX area trace holds: AUXTRACE_INFO types, AUXTRACE records and bytes."""

    def __init__(self):
        self.types = []         # AUXTRACE_INFO.type values, in the order seen
        self.records = 0        # AUXTRACE records
        self.bytes = 0          # trace bytes they carry (after each record, outside header.size)

    def note(self, rec, e):
        """Count one AUXTRACE_INFO or AUXTRACE record (ValueError: too short for its fields)."""
        if rec.type == C.PERF_RECORD_AUXTRACE_INFO:
            t = R.parse_auxtrace_info(rec.data, e)
            if t not in self.types:
                self.types.append(t)
        else:
            R.parse_auxtrace(rec.data, e)
            self.records += 1
            self.bytes += len(rec.extra)

    def __bool__(self):
        return bool(self.types or self.records)

    def pmus(self):
        """The tracers by name, as perf's enum auxtrace_type names them."""
        return [C.AUXTRACE_TYPES.get(t, "type %d" % t) for t in self.types] or ["unknown"]

    def to_json(self):
        return {"types": list(self.types), "pmus": self.pmus(), "records": self.records,
                "bytes": self.bytes}

    def warning(self, path):
        return ("deferstitch: %s: holds an AUX area trace (%s: %d bytes in %d AUXTRACE records) that "
                "deferstitch does not decode: the samples perf synthesizes from it (perf script "
                "--itrace) are absent; the recorded samples pass through"
                % (path, ", ".join(self.pmus()), self.bytes, self.records))
