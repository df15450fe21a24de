"""Two profiles compared: ``deferstitch diff BASE NEW``, for two perf.data or two trace.dat.

    BASE --the folded command's own run--> {"comm;outer;...;inner": weight} --.
    NEW  --the folded command's own run--> {"comm;outer;...;inner": weight} --+--> rows()
        rows() --> difffolded's text (write_folded), for flamegraph.pl
               --> a differential flame graph (write_graph): the shape of NEW, coloured by change
               --> pprof (write_pprof): NEW, and BASE negated and labelled, as pprof -diff_base

Each side is counted exactly as ``folded`` counts it (the caller's ``side(args, path)``: the
perf side's or the trace side's run, with every option of the command), so that a diff is the
diff of the two ``folded`` outputs, and every option applies to both sides alike.

The layouts follow the tools people already read them with:

- FlameGraph's difffolded.pl (github.com/brendangregg/FlameGraph): ``stack base new`` per
  stack found in either, 0 where absent; ``-n`` scales BASE's counts to NEW's total as
  difffolded does (``int(base * total_new / total_base)``, in Perl's numbers), ``-s`` turns
  every ``0x`` hex number into ``0x...`` before stacks are summed. difffolded prints in Perl's
  hash order; we sort by stack.
- flamegraph.pl's differential colouring: a frame's colour is the change of the stacks that end
  at it, red where it grew and blue where it shrank, the strongest change full (``color_scale``:
  the other two channels ``int(210 * (max - |d|) / max)``), white where nothing changed. We
  compare shares, not counts: each side's weight as a share of its own total, so two recordings
  of different length compare (as difffolded -n, without its rounding); the hover gives both
  counts, both shares and the change of the frame's share. The widths are NEW's: a stack
  gone from NEW has none (``diff NEW BASE`` shows BASE's shape, red then meaning it shrank).
- pprof's ``-diff_base`` (internal/driver/fetch.go): the base profile gets the label
  ``pprof::base=true`` and is scaled by -1, then merged with the new one; so the file holds
  NEW's samples and BASE's negated and labelled, and pprof reads it as it reads
  ``pprof -diff_base BASE NEW`` (its totals count the base samples only, as it does there).
  pprof normalizes only when asked (``-normalize``), so neither do we.
"""
import re
from collections import Counter

from ..errors import DeferstitchError
from . import flamegraph, pprof
from .atomic import Output, refuse_terminal

HEX = re.compile(r"0x[0-9a-fA-F]+")         # difffolded -s
_NV_EXACT = 1 << 53                           # integers a double holds exactly
_UV_MAX = (1 << 64) - 1


def strip_hex(stacks):
    """difffolded -s: every hex number ``0x...``, the stacks that become equal summed."""
    out = Counter()
    for stack, n in stacks.items():
        out[HEX.sub("0x...", stack)] += n
    return out


def perl_scaled(count, total_new, total_base):
    """``int($count * $total2 / $total1)`` as Perl computes it (difffolded -n): the product an
    integer while it fits 64 bits, the quotient an integer only when exact and either number is
    beyond a double's 53 bits (pp_divide's PERL_TRY_UV_DIVIDE), else a double."""
    prod = count * total_new
    if prod > _UV_MAX:
        q = float(count) * float(total_new) / float(total_base)
    elif (prod > _NV_EXACT or total_base > _NV_EXACT) and prod >= total_base and prod % total_base == 0:
        return prod // total_base
    else:
        q = float(prod) / float(total_base)
    return int(q)


def rows(base, new, normalize=False):
    """[(stack, base weight, new weight)] of every stack in either, sorted: difffolded's
    columns; ``normalize``: BASE scaled to NEW's total as difffolded -n scales it."""
    t1, t2 = sum(base.values()), sum(new.values())
    scale = normalize and t1 != t2 and t1 != 0      # (difffolded divides by zero there)
    out = []
    for stack in sorted(base.keys() | new.keys()):
        a = base.get(stack, 0)
        out.append((stack, perl_scaled(a, t2, t1) if scale else a, new.get(stack, 0)))
    return out


def write_folded(f, diff_rows):
    """difffolded's text: ``stack base new`` a line."""
    for stack, a, b in diff_rows:
        f.write("%s %d %d\n" % (stack, a, b))


def trees(diff_rows):
    """Two FlameTrees of the same frames (comm, then the stack root first): NEW's and BASE's."""
    new, base = flamegraph.FlameTree(), flamegraph.FlameTree()
    for stack, a, b in diff_rows:
        frames = [(name, flamegraph.COMM if i == 0 else "diff") for i, name in enumerate(stack.split(";"))]
        new.add(frames, b)
        base.add(frames, a)
    return new, base


class Painter:
    """Each frame of NEW's tree: flamegraph.pl's differential colour of the change of its own
    share (the stacks ending at it), and a label with both weights, both shares and the
    change of its whole share."""

    def __init__(self, new, base):
        self.base_of = {}
        self.total_new, self.total_base = new.root.value, base.root.value
        self.changes = {}
        todo = [(new.root, base.root)]
        while todo:
            n, b = todo.pop()
            self.base_of[id(n)] = b
            self.changes[id(n)] = self.share(_own(n), self.total_new) - self.share(_own(b), self.total_base)
            for key, child in n.children.items():
                todo.append((child, b.children.get(key, flamegraph.Node(*key))))
        # the strongest change of any stack, BASE's own too (flamegraph.pl's $maxdelta)
        gone = [self.share(v, self.total_base) for v in _gone(new.root, base.root)]
        self.max = max([abs(c) for c in self.changes.values()] + gone) or 1.0

    @staticmethod
    def share(value, total):
        return value / total if total else 0.0

    def colour(self, change):
        """flamegraph.pl's color_scale: red grew, blue shrank, white unchanged."""
        r = g = b = 255
        if change > 0:
            g = b = int(210 * (self.max - change) / self.max)
        elif change < 0:
            r = g = int(210 * (self.max + change) / self.max)
        return "rgb(%d,%d,%d)" % (r, g, b)

    def __call__(self, node, _total, unit):
        b = self.base_of[id(node)]
        new_share = 100 * self.share(node.value, self.total_new)
        base_share = 100 * self.share(b.value, self.total_base)
        change = self.changes[id(node)]
        label = "%s (%s, %.2f%%; base %s, %.2f%%; %+.2f%%)" % (
            node.name, flamegraph.amount(node.value, unit), new_share,
            flamegraph.amount(b.value, unit), base_share, new_share - base_share)
        return self.colour(change), label, ' data-base="%d" data-change="%.6f"' % (b.value, 100 * change)


def _own(node):
    """What a node weighs beyond its children: the stacks that end at it."""
    return node.value - sum(c.value for c in node.children.values())


def _gone(new, base):
    """The weights of BASE's stacks absent from NEW (own weights of nodes NEW lacks)."""
    todo = [(new, base)]
    while todo:
        n, b = todo.pop()
        for key, child in b.children.items():
            if key not in n.children:
                yield from (_own(x) for x in _walk(child))
            else:
                todo.append((n.children[key], child))


def _walk(node):
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        todo.extend(n.children.values())


def write_graph(f, diff_rows, path, title, width=1200, inverted=False, unit="samples"):
    """The differential flame graph (.svg by ``path``, else the HTML page)."""
    new, base = trees(diff_rows)
    painter = Painter(new, base)
    legend = [(painter.colour(painter.max), "share grew"), (painter.colour(-painter.max), "share shrank"),
              ("rgb(255,255,255)", "unchanged: colour by the change of the stacks ending at a frame, "
               "as shares of each profile's total (base %s, new %s)"
               % (flamegraph.amount(base.root.value, unit), flamegraph.amount(new.root.value, unit)))]
    flamegraph.write(f, new, path, title=title, width=width, inverted=inverted, unit=unit,
                     painter=painter, legend=legend)


def write_pprof(f, base, new, unit):
    """NEW's stacks, then BASE's negated with ``pprof::base=true``, in one Profile."""
    p = pprof.from_folded(new, unit, profile=pprof.Profile((unit,), signed=True))
    pprof.from_folded(base, unit, profile=p, base=True)
    p.write(f)


def run(args, side, weight):
    """The diff the command asks: each side counted by ``side(args, path)`` (the perf side's
    or the trace side's run of folded), by ``weight`` (folded's: samples, period or ns), then
    written to ``-o`` (replaced only when whole) as ``args.format`` says (None: a flame graph
    for .html/.svg, else folded)."""
    fmt = args.format or ("flamegraph" if (args.output or "").lower().endswith((".html", ".svg"))
                          else "folded")
    if fmt == "pprof" and args.normalize:
        raise DeferstitchError("-n/--normalize is difffolded's; pprof normalizes when reading "
                               "(pprof -normalize)")
    if fmt != "folded":
        refuse_terminal(args.output, "a gzip'd pprof profile" if fmt == "pprof" else "a flame graph's HTML")
    stacks = [side(args, args.base), side(args, args.new)]
    if args.strip_hex:
        stacks = [strip_hex(s) for s in stacks]
    base, new = stacks
    with Output(args.output, binary=fmt == "pprof", inputs=[args.base, args.new]) as f:
        if fmt == "pprof":
            waits = "off-cpu" if args.off_cpu else "wall" if getattr(args, "wall_clock", False) else None
            write_pprof(f, base, new, pprof.folded_unit(weight, waits))
        elif fmt == "flamegraph":
            write_graph(f, rows(base, new, args.normalize), args.output, args.title or _title(args),
                        args.width, args.inverted, weight)
        else:
            write_folded(f, rows(base, new, args.normalize))
    return 0


def _title(args):
    kind_ = ("Off-CPU Time " if args.off_cpu else "Wall-Clock Time "
             if getattr(args, "wall_clock", False) else "")
    return "Differential %sFlame Graph: %s -> %s" % (kind_, args.base, args.new)
