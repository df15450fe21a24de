"""The report as tables: totals by outcome and reason, by thread, by CPU, first unmatched."""
from ..model import PASSED, REASONS, STITCHED


def table(rows, headers):
    """Columns as tabulate's "simple" layout draws our cells (tablefmt="simple",
    disable_numparse=True), written here so that the report is the same bytes wherever it is
    printed, perf's embedded Python without tabulate included: every cell text, None empty,
    stripped (not the headers); each column as wide as its widest cell and at least its
    header plus 2, left aligned, two spaces between; dashes under the headers; each line's
    end trimmed. tests/test_tables.py holds it to tabulate."""
    cols = [[str(h) for h in headers]] + [[_cell(c) for c in r] for r in rows]
    widths = [max([len(cols[0][i]) + 2] + [len(r[i]) for r in cols[1:] if i < len(r)])
              for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cols]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell(c):
    return "" if c is None else str(c).strip()


def _pct(n, total):
    return "%.1f%%" % (100.0 * n / total) if total else "-"


def sections(rep):
    """The report's tables as [(headers, rows)]: the text report and the HTML page draw the same."""
    out = []
    total = rep.samples
    rows = [[STITCHED, rep.stitched, _pct(rep.stitched, total)],
            ["  of which after its stack was written", rep.stitched_after_stack,
             _pct(rep.stitched_after_stack, total)]]
    across = rep.extra.get("stitched_across_files")
    if across is not None:      # several files of one --switch-output recording (recording.py)
        rows.append(["  of which with its stack in a later file", across, _pct(across, total)])
    rows.append([PASSED + " (not deferred)", rep.passed, _pct(rep.passed, total)])
    for reason in sorted(rep.unmatched, key=lambda r: (REASONS.index(r) if r in REASONS else 99, r)):
        rows.append(["unmatched: " + reason, rep.unmatched[reason], _pct(rep.unmatched[reason], total)])
    rows.append(["samples", total, "" if rep.conserved() else "COUNTS DO NOT ADD UP"])
    out.append((["outcome", "samples", "share"], rows))
    out.append((["deferred records", "count"],
                [["deferred stacks", rep.deferred_records],
                 ["  serving no sample (orphan)", rep.orphan_deferred],
                 ["  duplicates of a cookie", rep.duplicate_deferred],
                 ["  context markers dropped inside", rep.dropped_frames],
                 ["lost-data notices (perf LOST/LOST_SAMPLES, ftrace missed events)", rep.lost_records],
                 ["  events they say were lost", rep.lost_events],
                 ["most samples pending at once", rep.max_pending]]))
    sr = rep.extra.get("sample_read")
    if sr:      # why samples != SAMPLE records: perf script shows one sample per value read
        out.append((["PERF_SAMPLE_READ (one sample per value read, as perf script)", "count"],
                    [["SAMPLE records", sr["records"]], ["values read", sr["values"]],
                     ["  samples", sr["samples"]], ["  not shown, as in perf: period 0", sr["zero_period"]],
                     ["  not shown, as in perf: unknown id", sr["unknown_id"]]]))
    keys = [STITCHED, PASSED] + sorted({k for _c, cnt in rep.by_thread.values() for k in cnt}
                                      - {STITCHED, PASSED})
    rows = [[comm or "", tid] + [cnt.get(k, 0) for k in keys]
            for tid, (comm, cnt) in sorted(rep.by_thread.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))]
    out.append((["comm", "tid"] + keys, rows))
    if any(cpu is not None for cpu in rep.by_cpu):
        rows = [[cpu] + [cnt.get(k, 0) for k in keys]
                for cpu, cnt in sorted(rep.by_cpu.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))]
        out.append((["cpu"] + keys, rows))
    if rep.first_unmatched:
        rows = [["%d.%06d" % (t // 10**9, t % 10**9 // 1000) if t is not None else "-", tid,
                 "%#x" % c if c is not None else "-", r] for t, tid, c, r in rep.first_unmatched]
        out.append((["first unmatched: time", "tid", "cookie", "reason"], rows))
    return out


def render(rep, title=None):
    parts = [title] if title else []
    if rep.deferred_layout == "no-cookie":
        parts.append("matched by task order: these deferred callchains carry no cookie (the layout "
                     "before the cookie patch; see README)")
        held = rep.extra.get("no_cookie_held_back")
        if held is not None:
            parts.append("held back for want of proof that no record was lost: %d (%s)" % (
                sum(held.values()), ", ".join("%s %d" % kv for kv in held.items()) or "none"))
    if rep.selection is not None:
        parts.append("chosen by %s: %d samples (%d left out; every sample was stitched, the counts "
                     "below are of the chosen)" % (rep.selection, rep.samples, rep.not_chosen))
    if rep.error is not None:
        parts.append("INCOMPLETE: the input stopped at %s; the counts are for what was read "
                     "before it" % rep.error)
    parts.append("\n\n".join(table(rows, headers) for headers, rows in sections(rep)))
    return "\n".join(parts) + "\n"
