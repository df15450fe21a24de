"""Flame graphs: one self-contained HTML or SVG file, interactive, that loads nothing.

    samples --add(frames root first, weight)--> FlameTree --page()--> .html / .svg

Each frame is an SVG ``<g class="frame">`` carrying its full name (``data-name``, ``<title>``,
``aria-label``), its samples and share: a search, a screen reader and a test read the same
thing. Kernel and user frames have colours of their own; a sample whose user stack could not be
stitched ends, where its user part would be, in a frame ``[user stack lost: REASON]`` of a third
colour, so a loss shows where it happened. flamegraph.js zooms (click), resets, searches (the
share matched) and shows a frame's details; it is the same script in both formats.
"""
import html
import json
import os
import zlib
from functools import partial

from ..abi.consts import PERF_CONTEXT_KERNEL, PERF_CONTEXT_MAX, PERF_CONTEXT_USER
from ..model import REASONS, UNMATCHED
from .frames import KeyedStacks, StackCache, comm_name, counted_weight, frame_name, lost_frame_name
from .sink import CHAINS, OFF_CPU, CountedSink

KERNEL, USER, LOST, COMM = "kernel", "user", "lost", "comm"
WAIT_KERNEL, WAIT_USER, VIEW = "wait-kernel", "wait-user", "view"   # off-CPU time: blues
FRAME_HEIGHT = 16
MIN_WIDTH_PX = 0.1          # narrower frames are left out, as flamegraph.pl's --minwidth
SCRIPT = os.path.join(os.path.dirname(__file__), "flamegraph.js")
TIMELINE_SCRIPT = os.path.join(os.path.dirname(__file__), "timeline.js")
TIMELINE_BINS = 400         # slices of the recording on the page's timeline


class Node:
    __slots__ = ("name", "kind", "value", "after", "children")

    def __init__(self, name, kind):
        self.name, self.kind = name, kind
        self.value = self.after = 0
        self.children = {}


class FlameTree:
    """Counts stacks as a tree: the root ``all``, then each sample's frames, root first."""

    def __init__(self):
        self.root = Node("all", "root")

    def add(self, frames, w=1, after_stack=False):
        """``frames``: [(name, kind)] outermost first; ``after_stack``: a sample stitched after
        its entry's stack was written (shown in the details of each of its frames)."""
        node = self.root
        node.value += w
        node.after += after_stack
        for key in frames:
            child = node.children.get(key)
            if child is None:
                child = node.children[key] = Node(*key)
            child.value += w
            child.after += after_stack
            node = child


def _colour(name, kind):
    """Warm (flamegraph.pl's "hot") for user code, aqua for the kernel, violet for lost user stacks."""
    v = zlib.crc32(name.encode()) & 0xFFFF
    a, b = v & 0xFF, v >> 8
    if kind == KERNEL:
        return "rgb(%d,%d,%d)" % (40 + a % 50, 170 + b % 50, 160 + a % 50)
    if kind == WAIT_USER:       # flamegraph.pl's "io" palette for off-CPU time
        return "rgb(%d,%d,%d)" % (80 + a % 60, 110 + b % 60, 220 + a % 35)
    if kind == WAIT_KERNEL:
        return "rgb(%d,%d,%d)" % (40 + a % 40, 140 + b % 50, 200 + a % 40)
    if kind == LOST:
        return "rgb(%d,%d,%d)" % (120 + a % 30, 90 + b % 30, 235)
    if kind in (COMM, "root", VIEW):
        return "rgb(%d,%d,%d)" % (190 + a % 30, 190 + a % 30, 170 + b % 30)
    return "rgb(%d,%d,%d)" % (205 + a % 50, 60 + b % 120, 40 + a % 40)


def _frames(tree, width, inverted):
    """(x, width, depth, node) of each frame wide enough to draw; the depth of the tree."""
    total = tree.root.value or 1
    scale = width / total
    out, depth = [], 0
    stack = [(tree.root, 0.0, 0)]
    while stack:
        node, x, d = stack.pop()
        out.append((x, node.value * scale, d, node))
        depth = max(depth, d)
        cx = x
        for child in sorted(node.children.values(), key=lambda n: (n.name, n.kind)):
            w = child.value * scale
            if w >= MIN_WIDTH_PX:
                stack.append((child, cx, d + 1))
            cx += w
    return out, depth + 1


def svg(tree, title="Flame Graph", width=1200, inverted=False, unit="samples", standalone=True,
        waits=False):
    """The flame graph as SVG text (``standalone``: with its XML prolog, script and controls)."""
    frames, depth = _frames(tree, width, inverted)
    top, bottom = 60, 34
    height = top + depth * FRAME_HEIGHT + bottom
    total = tree.root.value or 1
    esc = html.escape
    out = []
    if standalone:
        out.append('<?xml version="1.0" standalone="no"?>\n')
    out.append('<svg version="1.1" id="flamegraph" width="%d" height="%d" viewBox="0 0 %d %d" '
               'xmlns="http://www.w3.org/2000/svg" data-total="%d" data-unit="%s" data-inverted="%d" '
               'role="img" aria-label="%s">\n' % (width, height, width, height, total, esc(unit),
                                                  int(inverted), esc(title)))
    out.append(STYLE)
    out.append('<rect x="0" y="0" width="100%%" height="100%%" fill="#f8f8f4"/>\n'
               '<text id="fg-title" x="%d" y="24" text-anchor="middle" font-size="17">%s</text>\n'
               % (width // 2, esc(title)))
    if standalone:
        out.append('<text id="fg-reset" x="10" y="24" class="button" style="opacity:0">Reset Zoom</text>\n'
                   '<text id="fg-search" x="%d" y="24" class="button" text-anchor="end">Search</text>\n'
                   % (width - 10))
    out.append('<text id="fg-matched" x="%d" y="%d" text-anchor="end"></text>\n'
               '<text id="fg-details" x="10" y="%d"> </text>\n'
               % (width - 10, height - 12, height - 12))
    out.append('<g id="frames" font-family="Verdana, sans-serif" font-size="12">\n')
    for x, w, d, node in frames:
        y = (top + d * FRAME_HEIGHT) if inverted else (height - bottom - (d + 1) * FRAME_HEIGHT)
        share = 100.0 * node.value / total
        label = "%s (%s, %.2f%%%s)" % (node.name, amount(node.value, unit), share,
                                          ", %d stitched after their stack" % node.after if node.after else "")
        out.append('<g class="frame %s" data-name="%s" data-kind="%s" data-value="%d" data-after="%d" '
                   'data-x="%.3f" data-w="%.3f" data-d="%d" aria-label="%s"><title>%s</title>'
                   '<rect x="%.1f" y="%d" width="%.1f" height="%d" rx="2" fill="%s"/>'
                   '<text x="%.1f" y="%d"></text></g>\n'
                   % (node.kind, esc(node.name), node.kind, node.value, node.after, x, w, d,
                      esc(label), esc(label), x, y, max(w - 0.5, 0.1), FRAME_HEIGHT - 1,
                      _colour(node.name, node.kind), x + 3, y + FRAME_HEIGHT - 4))
    out.append('</g>\n')
    if standalone:
        with open(SCRIPT) as f:
            out.append('<script type="text/ecmascript"><![CDATA[\n%s\n]]></script>\n' % f.read())
    out.append('</svg>\n')
    return "".join(out)


STYLE = ("<style>.frame{cursor:pointer}.frame:hover rect{stroke:#000;stroke-width:0.5}"
         ".frame.hidden{display:none}.frame.parent rect{opacity:0.6}.frame.match rect{fill:rgb(230,0,230)}"
         "text{pointer-events:none;font-family:Verdana,sans-serif;font-size:12px}"
         ".button{cursor:pointer;pointer-events:all;fill:#336}</style>\n")
LEGEND = ((USER, "user"), (KERNEL, "kernel"), (LOST, "user stack lost"))
WAIT_LEGEND = ((WAIT_USER, "user, off-CPU"), (WAIT_KERNEL, "kernel, off-CPU"))


class Timeline:
    """The page's timeline: each stack's weight per slice of the recording, so that the page
    draws the graph anew for a range of slices exactly as ``--time`` chooses samples.

    A slice i holds the samples of times t0 + i * width ... t0 + (i + 1) * width - 1 ns (the
    recording's first sample time t0, from the header); slices i..j are ``--time A,B`` with A
    the first ns of i and B the last of j, so a range chosen on the page is a ``--time`` range
    (the page's address says it: ``#time=A,B``). A sample without a time is in every range."""

    def __init__(self, first, last, slices=TIMELINE_BINS):
        self.t0 = first
        self.width = max(1, -(-(last - first + 1) // slices))
        self.slices = slices
        self.stacks = {}            # frames, root first -> {slice (-1: no time): [weight, after]}

    def slice(self, time):
        if time is None:
            return -1
        return max(0, (time - self.t0) // self.width)

    def add(self, frames, time, w, after):
        cell = self.stacks.setdefault(tuple(frames), {}).setdefault(self.slice(time), [0, 0])
        cell[0] += w
        cell[1] += after

    def data(self, unit):
        """The page's JSON: the frames (name, kind, colour) once, each stack as their indexes,
        and its [slice, weight, after, ...]."""
        index, table, stacks, cells = {}, [], [], []
        for frames, by_slice in sorted(self.stacks.items()):    # the same bytes on both twins
            ids = []
            for key in frames:
                i = index.get(key)
                if i is None:
                    i = index[key] = len(table)
                    table.append([key[0], key[1], _colour(*key)])
                ids.append(i)
            stacks.append(ids)
            cells.append([v for b in sorted(by_slice) for v in (b, *by_slice[b])])
        return {"t0": self.t0, "width": self.width, "slices": self.slices, "unit": unit,
                "frames": table, "stacks": stacks, "cells": cells}


def page(tree, title="Flame Graph", width=1200, inverted=False, unit="samples", waits=False,
         timeline=None):
    """The flame graph in an HTML page: the SVG inline, a search box, buttons and a tooltip;
    with a ``timeline``, the samples over time above it, where a range redraws the graph."""
    esc = html.escape
    with open(SCRIPT) as f:
        script = f.read()
    strip = ""
    if timeline is not None:
        with open(TIMELINE_SCRIPT) as f:
            script += "\n" + f.read()
        strip = ('<div id="fg-timeline-box"><svg id="fg-timeline" width="%d" height="%d" role="img" '
                 'aria-label="samples over time: drag to choose a range"></svg>'
                 '<div id="fg-range-controls"><span id="fg-range"></span> '
                 '<button id="fg-range-reset" type="button">Whole recording</button> '
                 '<label><input id="fg-per-thread" type="checkbox"> per thread</label></div></div>\n'
                 '<script type="application/json" id="fg-data">%s</script>\n'
                 % (width, 64, json.dumps(timeline.data(unit), separators=(",", ":")).replace("</", "<\\/")))
    legend = "".join('<span class="key"><span class="swatch" style="background:%s"></span>%s</span>'
                     % (_colour("legend", kind), text) for kind, text in LEGEND + (WAIT_LEGEND if waits else ()))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>%s</title>\n"
            "<style>body{font-family:Verdana,sans-serif;font-size:13px;margin:12px;background:#fff}"
            "#controls{margin-bottom:6px}#controls>*{margin-right:8px}"
            ".key{margin-right:14px}.swatch{display:inline-block;width:12px;height:12px;margin-right:4px;"
            "vertical-align:middle;border:1px solid #888}"
            "#fg-tip{position:fixed;display:none;background:#ffe;border:1px solid #999;padding:4px 6px;"
            "pointer-events:none;font-size:12px;max-width:600px;word-break:break-all}"
            "</style>\n</head><body>\n"
            "<div id=\"controls\"><input id=\"fg-query\" type=\"search\" placeholder=\"search (regex)\" "
            "aria-label=\"search frames\"><button id=\"fg-reset-button\" type=\"button\">Reset zoom</button>"
            "<button id=\"fg-clear\" type=\"button\">Clear search</button>%s</div>\n"
            "%s%s<div id=\"fg-tip\" role=\"tooltip\"></div>\n<script>\n%s\n</script>\n</body></html>\n"
            % (esc(title), legend, strip, svg(tree, title, width, inverted, unit, standalone=False), script))


def amount(value, unit):
    """A frame's weight as its label says it: "1,234 samples", or for nanoseconds ("ns") a time
    in the unit that reads best ("12.35 ms")."""
    if unit != "ns":
        return "%s %s" % (format(value, ","), unit)
    for scale, name in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if value >= scale:
            return "%.2f %s" % (value / scale, name)
    return "%d ns" % value


def is_svg(path):
    return bool(path) and path.lower().endswith(".svg")


def write(f, tree, path, timeline=None, **kw):
    """page() or svg() by the output's name (``.svg``: SVG, anything else HTML)."""
    f.write(svg(tree, **kw) if is_svg(path) else page(tree, timeline=timeline, **kw))


def _named(_pid, frames, addressed=False):
    """[(name, KERNEL or USER)] of a chain's real addresses, innermost first: the kind by the
    chain's context markers, else by the address (the kernel half of the address space);
    ``addressed``: a frame of no known file named by its address (frame_name)."""
    out, ctx = [], None
    for ip, sym, _off, dso in frames:
        if ip >= PERF_CONTEXT_MAX:
            ctx = USER if ip == PERF_CONTEXT_USER else KERNEL if ip == PERF_CONTEXT_KERNEL else ctx
            continue
        out.append((frame_name(sym, dso, addressed and ip), ctx or (KERNEL if ip >> 63 else USER)))
    return out


_WAIT = {USER: WAIT_USER, KERNEL: WAIT_KERNEL}
_LOST = (None, None) + REASONS          # engine.KEYS: the reason of an unmatched outcome


class FlameGraph(CountedSink):
    """Each resolved sample into a FlameTree, named through a StackCache; ``close()`` writes the
    page. On the C engine the samples come counted per stack, with their chains' context
    markers (MODE_CHAINS). With a ``namer`` (the trace side's), samples come to named(), their
    chains named through a KeyedStacks."""

    takes = CHAINS

    def __init__(self, f, ctx, path=None, title=None, width=1200, inverted=False, weight="samples",
                 namer=None, times=None):
        """``times``: the recording's (first, last) sample times: the HTML page gets a timeline."""
        self.f, self.ctx, self.path = f, ctx, path
        self.timeline = None
        if times and times[0] and times[1] and not is_svg(path):
            self.timeline = Timeline(*times)
            self.bins = (self.timeline.t0, self.timeline.width)     # the engine's slices
        self.kw = {"title": title or "Flame Graph", "width": width, "inverted": inverted,
                   "unit": weight if weight in ("period", "ns") else "samples"}
        self.weight = weight
        self.tree = FlameTree()
        if namer is None:       # (pid, chain with its markers) -> named frames
            self._names = StackCache(ctx, _named)
        else:
            self._names = KeyedStacks(namer, partial(_named, addressed=True), chains=True)

    def resolved_counted(self, pid, tid, comm, ips, period, entry, count, key, first, _last, after):
        """``count`` samples of one chain (sink.Counted, MODE_CHAINS): ``ips`` the chain as
        native u64 bytes (a tuple from the Python path), ``period`` their sum (None: the attr's
        fixed period), ``after`` how many were stitched after their stack."""
        self._add_named(self._names.get(pid, ips), self.ctx.comm_of(tid, comm), _LOST[key],
                        counted_weight(self.weight, count, period, self.ctx, entry),
                        after, first)

    def named(self, s, weight=1):
        """A sample whose chain the namer names, its outcome final; it counts ``weight`` (1, or
        a wait's ns: tracecmd/offcpu.py)."""
        self._add_named(self._names.get(s), s.comm or "<...>",
                        s.reason if s.outcome == UNMATCHED else None, weight, s.after_stack)

    def _add_named(self, named, comm, reason, w, after, time=None):
        frames = list(named)
        if reason:
            frames.append((lost_frame_name(reason), LOST))
        # off-CPU time in the blues: under [off-cpu], or alone (ns without a view)
        if self.view == OFF_CPU or (self.view is None and self.kw["unit"] == "ns"):
            frames = [(n, _WAIT.get(k, k)) for n, k in frames]
            self.kw["waits"] = True
        if self.view is not None:
            frames.append((self.view, VIEW))
        frames.append((comm_name(comm), COMM))
        frames.reverse()
        self.tree.add(frames, w, after)
        if self.timeline is not None:       # all of one aggregate lie in one slice (bins)
            self.timeline.add(frames, time, w, after)

    def close(self):
        write(self.f, self.tree, self.path, timeline=self.timeline, **self.kw)
