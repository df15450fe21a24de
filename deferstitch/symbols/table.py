"""A sorted symbol table with perf's rules for duplicates, zero sizes and labels (util/symbol.c).

First a zero-sized symbol is extended to the next one's start (symbols__fixup_end; among
symbols at one address only the last gets a size), then one symbol per start address is kept
(symbols__fixup_duplicate → choose_best_symbol: sized over zero-sized, a typed symbol over a
STT_NOTYPE label, non-weak over weak, global over local, fewer leading underscores, longer name,
else the first) — the order symbol-elf.c and __dso__load_kallsyms use both. The winner over an
STT_GNU_IFUNC symbol is marked an IFUNC alias (perf names IRELATIVE PLT slots after it).

A zero-size STT_NOTYPE label inside a sized symbol (glibc's ``__syscall_cancel_arch_end``, the
return address of the system call in ``__syscall_cancel_arch``) is extended like any other and
then overlaps its function; perf's rb-tree lookup (symbols__find) returns whichever of the two it
meets first, and perf 7.2 names such addresses after the function (``__syscall_cancel_arch+0x2e``,
tests/data/libc_dbg). So do we: the label names only the addresses past the function's end.

Built column by column (starts, ends, names as parallel lists) so that a .symtab of a million
symbols costs a few list passes, not a tuple and a comparison call per symbol.
"""
import bisect
from itertools import compress, islice, repeat
from operator import eq, itemgetter

LOCAL, GLOBAL, WEAK = 0, 1, 2
STT_NOTYPE, STT_FUNC, STT_GNU_IFUNC = 0, 2, 10


def _underscores(name):
    return len(name) - len(name.lstrip("_"))


def _better(a, b):
    """True when symbol a wins over b at the same address (perf's choose_best_symbol).
    a and b are (start, end, binding, name[, type])."""
    sa, ea, bna, na = a[:4]
    sb, eb, bnb, nb = b[:4]
    la, lb = ea - sa, eb - sb
    if lb == 0 and la > 0:
        return True
    if la == 0 and lb > 0:
        return False
    ta, tb = (a[4] if len(a) > 4 else STT_FUNC), (b[4] if len(b) > 4 else STT_FUNC)
    if ta != tb and STT_NOTYPE in (ta, tb):     # perf 6.13, 8c2eafbbfd78: labels lose
        return tb == STT_NOTYPE
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
    """Symbols (start, end, binding, name[, type]); ``find(addr)`` -> (name, addr - start) or
    None. ``names`` may be any sequence (ElfSymbols hands a lazy one: names decoded on use)."""

    def __init__(self, symbols=(), columns=None):
        if columns is None:
            symbols = list(symbols)
            columns = ([s[0] for s in symbols], [s[1] for s in symbols], [s[2] for s in symbols],
                       [s[4] if len(s) > 4 else STT_FUNC for s in symbols],
                       [s[3] for s in symbols])
        self._build(*columns)

    @classmethod
    def from_columns(cls, starts, ends, binds, types, names):
        """The same table from parallel lists in file order (ends == starts: no size)."""
        return cls(columns=(starts, ends, binds, types, names))

    def _build(self, start, end, bind, typ, names):
        n = len(start)
        order = sorted(range(n), key=start.__getitem__)     # stable: equal starts keep file order
        if all(map(eq, order, range(n))):
            S, E, X = start, list(end), list(range(n))
        else:               # only starts and ends move; bindings and types are read through X
            S, E = (list(itemgetter(*order)(c)) if n > 1 else [c[order[0]]] for c in (start, end))
            X = order
        zero = list(compress(range(n), map(eq, S, E)))       # symbols__fixup_end
        for i in zero:
            E[i] = S[i + 1] if i + 1 < n else (S[i] + 4095) // 4096 * 4096 + 4096
        T = typ.__getitem__
        ifunc = set(compress(range(n), map(eq, map(T, X), repeat(STT_GNU_IFUNC, n))))
        zero_set = set(zero)
        dups = list(compress(range(n - 1), map(eq, S, islice(S, 1, None)))) if n > 1 else []
        gone = set()
        self._alias = {}
        for i in dups:              # symbols__fixup_duplicate: i and i + 1 share a start
            cur = i                 # the group's winner so far
            while cur in gone:
                cur -= 1
            x, y = X[cur], X[i + 1]
            a = (S[cur], E[cur], bind[x], names[x], typ[x])
            b = (S[i + 1], E[i + 1], bind[y], names[y], typ[y])
            if _better(a, b):
                if typ[y] == STT_GNU_IFUNC:
                    ifunc.add(cur)          # perf: curr->ifunc_alias
                gone.add(i + 1)
                win = cur
            else:
                if typ[x] == STT_GNU_IFUNC:
                    ifunc.add(i + 1)
                gone.add(cur)
                win = i + 1
            if i + 2 >= n or S[i + 2] != S[i + 1]:
                if win != i + 1:    # bisect lands on a group's last symbol: send it to the winner
                    self._alias[i + 1] = win
        self._gone = gone
        self._outer = {}
        for i in zero:              # a zero-size label inside the sized symbol before it
            if i in gone or typ[X[i]] != STT_NOTYPE:
                continue
            j = i - 1
            while j >= 0 and (j in zero_set or j in gone):
                j -= 1
            if j >= 0 and S[j] < S[i] < E[j]:
                self._outer[i] = j
        self.starts, self._ends, self._idx, self._names = S, E, X, names
        self._ifunc = ifunc
        self._xstarts, self._xends, self._xnames = [], [], []

    def _name(self, i):
        return self._names[self._idx[i]]

    @property
    def syms(self):
        """Every kept symbol as (start, end, name), sorted; synthesized ones after those at
        their start."""
        out = [(s, e, self._name(i)) for i, (s, e) in enumerate(zip(self.starts, self._ends))
               if i not in self._gone]
        extra = list(zip(self._xstarts, self._xends, self._xnames))
        return sorted(out + extra, key=lambda sym: sym[0]) if extra else out

    def add_sized(self, symbols):
        """Symbols perf adds after the fixups (synthesized PLT entries): kept as they are, after
        any symbol with the same start (a side table: the big one is not copied)."""
        for start, end, name in symbols:
            i = bisect.bisect_right(self._xstarts, start)
            self._xstarts.insert(i, start)
            self._xends.insert(i, end)
            self._xnames.insert(i, name)

    def __len__(self):
        return len(self.starts) - len(self._gone) + len(self._xstarts)

    def ifunc_at(self, addr):
        """The name of the symbol starting at addr when it is an IFUNC or an IFUNC's alias
        (perf's get_ifunc_name), else None."""
        i = bisect.bisect_right(self.starts, addr) - 1
        i = self._alias.get(i, i)
        if i >= 0 and self.starts[i] == addr and i in self._ifunc:
            return self._name(i)
        return None

    def find(self, addr):
        i = bisect.bisect_right(self.starts, addr) - 1
        k = bisect.bisect_right(self._xstarts, addr) - 1
        if k >= 0 and (i < 0 or self._xstarts[k] >= self.starts[i]):
            # the last start at or below addr is a synthesized one (after equal starts)
            if addr >= self._xends[k]:
                return None
            return self._xnames[k], addr - self._xstarts[k]
        if i < 0:
            return None
        i = self._alias.get(i, i)
        if addr >= self._ends[i]:
            return None
        j = self._outer.get(i)
        if j is not None and addr < self._ends[j]:
            i = j
        return self._name(i), addr - self.starts[i]
