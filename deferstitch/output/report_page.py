"""The report as one HTML page that loads nothing: its tables, a bar per outcome and reason, and
a timeline (time on x; a row per CPU and per thread; stitched / passed / unmatched by reason;
lost-data notices marked).

The timeline keeps counts in at most BINS time bins per row: a bin doubles in width whenever the
span outgrows them, so memory follows rows x BINS, not the length of the input.
"""
import html

from ..abi import consts as C
from ..model import OUTCOME_KEYS, PASSED, REASONS, STITCHED
from .sink import OUTCOMES, Sink
from .tables import sections

BINS = 400
TOP_THREADS = 32            # threads drawn one row each; the rest share a row
COLOURS = {STITCHED: "#2e9d4f", PASSED: "#a0a4a8"}
REASON_COLOURS = ("#d7301f", "#fc8d59", "#7b3294", "#e7298a", "#8c510a", "#1f78b4", "#b2182b")


def colour(key):
    if key in COLOURS:
        return COLOURS[key]
    i = REASONS.index(key) if key in REASONS else len(REASONS) + sum(map(ord, key))
    return REASON_COLOURS[i % len(REASON_COLOURS)]


class Timeline:
    """Samples per (row, outcome or reason, time bin); lost-data notices per bin."""

    def __init__(self):
        self.t0 = None
        self.width = 1000           # ns per bin; doubles as the span grows
        self.cells = {}             # (("cpu", n) | ("tid", n), key, bin) -> samples
        self.lost = {}              # bin -> notices
        self.comms = {}             # tid -> comm
        self.per_tid = {}           # tid -> samples
        self.end = 0                # the last bin used
        self.untimed = 0

    def _bin(self, time):
        if self.t0 is None:
            self.t0 = time
        b = max(time - self.t0, 0) // self.width
        while b >= BINS:
            self._coarsen()
            b = max(time - self.t0, 0) // self.width
        self.end = max(self.end, b)
        return b

    def _coarsen(self):
        self.width *= 2
        cells = {}
        for (row, key, b), n in self.cells.items():
            k = (row, key, b // 2)
            cells[k] = cells.get(k, 0) + n
        self.cells = cells
        lost = {}
        for b, n in self.lost.items():
            lost[b // 2] = lost.get(b // 2, 0) + n
        self.lost = lost
        self.end //= 2

    def add(self, time, cpu, tid, comm, key):
        if time is None:
            self.untimed += 1
            return
        b = self._bin(time)
        cells = self.cells
        for row in (("cpu", cpu), ("tid", tid)):
            k = (row, key, b)
            cells[k] = cells.get(k, 0) + 1
        if comm:
            self.comms[tid] = comm
        self.per_tid[tid] = self.per_tid.get(tid, 0) + 1

    def lost_notice(self, time):
        if time is None:
            return
        b = self._bin(time)
        self.lost[b] = self.lost.get(b, 0) + 1

    def rows(self):
        """[(label, {bin: {key: n}})]: CPUs, then the busiest threads, then the others."""
        by_row = {}
        top = sorted(self.per_tid, key=lambda t: (-self.per_tid[t], t if t is not None else -1))
        shown = set(top[:TOP_THREADS])
        for (row, key, b), n in self.cells.items():
            if row[0] == "tid" and row[1] not in shown:
                row = ("tid", "other")
            bins = by_row.setdefault(row, {}).setdefault(b, {})
            bins[key] = bins.get(key, 0) + n
        out = []
        for cpu in sorted(r[1] for r in by_row if r[0] == "cpu" and r[1] is not None):
            out.append(("cpu %d" % cpu, by_row[("cpu", cpu)]))
        for tid in top[:TOP_THREADS]:
            name = self.comms.get(tid) or ("swapper" if tid == 0 else "")
            out.append(("%s %s" % (name, tid), by_row[("tid", tid)]))
        if ("tid", "other") in by_row:
            out.append(("%d other threads" % (len(top) - TOP_THREADS), by_row[("tid", "other")]))
        return out


def _timeline_svg(tl, keys):
    esc = html.escape
    left, plot, row_h, top = 170, 900, 18, 30
    rows = tl.rows()
    nbins = max(tl.end + 1, 1)
    bw = plot / nbins
    height = top + (len(rows) + 1) * row_h + 30
    out = ['<svg id="timeline" width="%d" height="%d" xmlns="http://www.w3.org/2000/svg" '
           'role="img" aria-label="samples over time, per CPU and per thread">' % (left + plot + 10, height)]
    span = nbins * tl.width
    for i in range(6):                  # time axis
        x = left + plot * i / 5
        out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ddd"/>'
                   '<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%.3f s</text>'
                   % (x, x, top - 4, height - 26, x, height - 12, span * i / 5 / 1e9))
    y = top
    out.append('<text x="4" y="%d" font-size="11">lost-data notices</text>' % (y + 12))
    for b, n in sorted(tl.lost.items()):
        out.append('<rect class="lost" x="%.1f" y="%d" width="%.1f" height="%d" fill="#000">'
                   '<title>%d lost-data notice(s) at %.6f s</title></rect>'
                   % (left + b * bw, y + 2, max(bw, 2), row_h - 4, n, b * tl.width / 1e9))
    for label, bins in rows:
        y += row_h
        peak = max(sum(c.values()) for c in bins.values()) or 1
        out.append('<g class="row" data-row="%s"><text x="4" y="%d" font-size="11">%s</text>'
                   % (esc(label), y + 12, esc(label[:26])))
        for b, counts in sorted(bins.items()):
            base = y + row_h - 1
            for key in keys:
                n = counts.get(key)
                if not n:
                    continue
                h = (row_h - 3) * n / peak
                base -= h
                out.append('<rect x="%.1f" y="%.2f" width="%.2f" height="%.2f" fill="%s" data-key="%s">'
                           '<title>%s: %d at %.6f s</title></rect>'
                           % (left + b * bw, base, max(bw - 0.2, 0.5), h, colour(key), key, key, n,
                              b * tl.width / 1e9))
        out.append('</g>')
    out.append('</svg>')
    return "".join(out)


def _bars_svg(rep, keys):
    counts = [(k, rep.stitched if k == STITCHED else rep.passed if k == PASSED else rep.unmatched[k])
              for k in keys]
    peak = max([n for _k, n in counts] + [1])
    row_h, left, plot = 22, 300, 600
    out = ['<svg id="reasons" width="%d" height="%d" xmlns="http://www.w3.org/2000/svg" role="img" '
           'aria-label="samples by outcome and reason">' % (left + plot + 120, row_h * len(counts) + 8)]
    for i, (k, n) in enumerate(counts):
        y = 4 + i * row_h
        label = k if k in (STITCHED, PASSED) else "unmatched: " + k
        out.append('<g class="bar" data-key="%s" data-count="%d"><text x="4" y="%d" font-size="12">%s</text>'
                   '<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>'
                   '<text x="%.1f" y="%d" font-size="12">%d</text></g>'
                   % (k, n, y + 15, html.escape(label), left, y + 2, plot * n / peak, row_h - 6,
                      colour(k), left + plot * n / peak + 6, y + 15, n))
    out.append('</svg>')
    return "".join(out)


def page(rep, timeline, title):
    """The whole page for a StitchReport and its Timeline."""
    esc = html.escape
    keys = [STITCHED, PASSED] + sorted(rep.unmatched, key=lambda r: (REASONS.index(r) if r in REASONS else 99, r))
    tables = []
    for headers, rows in sections(rep):
        tables.append("<table><thead><tr>%s</tr></thead><tbody>%s</tbody></table>" % (
            "".join("<th>%s</th>" % esc(str(h)) for h in headers),
            "".join("<tr>%s</tr>" % "".join("<td>%s</td>" % esc(str(c)) for c in r) for r in rows)))
    legend = "".join('<span class="key"><span class="swatch" style="background:%s"></span>%s</span>'
                     % (colour(k), esc(k)) for k in keys)
    verdict = ("samples = stitched + passed + unmatched: the counts add up" if rep.conserved()
               else "THE COUNTS DO NOT ADD UP")
    if getattr(rep, "error", None):
        verdict += ". INCOMPLETE: the input stopped at %s; the counts are for what was read before it" % rep.error
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>\n"
            "<style>body{font-family:Verdana,sans-serif;font-size:13px;margin:16px}"
            "table{border-collapse:collapse;margin:8px 0 18px}td,th{border:1px solid #ccc;padding:2px 8px;"
            "text-align:left}th{background:#f0f0f0}.key{margin-right:14px}.swatch{display:inline-block;"
            "width:12px;height:12px;margin-right:4px;vertical-align:middle}</style></head><body>\n"
            "<h1>%s</h1>\n<p id=\"verdict\">%d samples: %d stitched (%d after their stack), %d passed, "
            "%d unmatched. %s.</p>\n<h2>Outcomes and reasons</h2>\n%s\n"
            "<h2>Timeline</h2>\n<p>%s</p>\n%s\n<p>bins of %.3f ms%s</p>\n<h2>Tables</h2>\n%s\n</body></html>\n"
            % (esc(title), esc(title), rep.samples, rep.stitched, rep.stitched_after_stack, rep.passed,
               rep.total_unmatched, verdict, _bars_svg(rep, keys), legend, _timeline_svg(timeline, keys),
               timeline.width / 1e6,
               "; %d samples without a time are not drawn" % timeline.untimed if timeline.untimed else "",
               "\n".join(tables)))


class ReportPage(Sink):
    """The perf-side output of ``report --html``: samples and LOST records in time order."""

    takes = OUTCOMES

    LOST = (C.PERF_RECORD_LOST, C.PERF_RECORD_LOST_SAMPLES)

    def __init__(self, f, perf, title):
        self.f, self.perf, self.title = f, perf, title
        self.timeline = Timeline()
        self.report = None

    def record(self, rec):
        if rec.type in self.LOST:
            self.timeline.lost_notice(self.perf.evlist.time_of(rec))

    def sample(self, s):
        """A sample from the Python path, in time order."""
        self.timeline.add(s.time, s.cpu, s.tid, s.comm, s.outcome if s.outcome in (STITCHED, PASSED) else s.reason)

    def outcome(self, time, cpu, tid, comm, key):
        """A sample from the C engine (MODE_OUTCOMES), in time order: ``key`` its outcome's
        number (model.OUTCOME_KEYS)."""
        self.timeline.add(time, cpu, tid, comm, OUTCOME_KEYS[key])

    def close(self):
        if self.report is not None:
            self.f.write(page(self.report, self.timeline, self.title))
