"""A sorted symbol table with perf's rules for duplicates and zero sizes (util/symbol.c).

First a zero-sized symbol is extended to the next one's start (symbols__fixup_end; among
symbols at one address only the last gets a size), then one symbol per start address is kept
(symbols__fixup_duplicate → choose_best_symbol: sized over zero-sized, non-weak over weak,
global over local, fewer leading underscores, longer name, else the first) — the order
symbol-elf.c and __dso__load_kallsyms use both.
"""
import bisect

LOCAL, GLOBAL, WEAK = 0, 1, 2


def _underscores(name):
    return len(name) - len(name.lstrip("_"))


def _better(a, b):
    """True when symbol a wins over b at the same address (perf's choose_best_symbol)."""
    (sa, ea, bna, na), (sb, eb, bnb, nb) = a, b
    la, lb = ea - sa, eb - sb
    if lb == 0 and la > 0:
        return True
    if la == 0 and lb > 0:
        return False
    if (bnb == WEAK) != (bna == WEAK):
        return bnb == WEAK
    if (bna == GLOBAL) != (bnb == GLOBAL):
        return bna == GLOBAL
    ua, ub = _underscores(na), _underscores(nb)
    if ua != ub:
        return ua < ub
    if len(na) != len(nb):
        return len(na) > len(nb)
    return True          # x86: arch__choose_best_symbol keeps the first


class SymbolTable:
    """Symbols (start, end, binding, name); ``find(addr)`` -> (name, addr - start) or None."""

    def __init__(self, symbols):
        syms = sorted(symbols, key=lambda sym: sym[0])      # stable: equal starts keep file order
        sized = []
        for i, (start, end, bind, name) in enumerate(syms):
            if end == start:
                end = syms[i + 1][0] if i + 1 < len(syms) else (start + 4095) // 4096 * 4096 + 4096
            sized.append((start, end, bind, name))
        kept = []
        for sym in sized:
            if kept and kept[-1][0] == sym[0]:
                if not _better(kept[-1], sym):
                    kept[-1] = sym
                continue
            kept.append(sym)
        self.starts = [k[0] for k in kept]
        self.syms = [(k[0], k[1], k[3]) for k in kept]

    def add_sized(self, symbols):
        """Symbols perf adds after the fixups (synthesized PLT entries): kept as they are."""
        merged = sorted(self.syms + [(start, end, name) for start, end, name in symbols],
                        key=lambda sym: sym[0])
        self.syms = merged
        self.starts = [m[0] for m in merged]

    def __len__(self):
        return len(self.syms)

    def find(self, addr):
        i = bisect.bisect_right(self.starts, addr) - 1
        if i < 0:
            return None
        start, end, name = self.syms[i]
        if addr >= end:
            return None
        return name, addr - start
