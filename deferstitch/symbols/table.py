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

Built column by column (starts, sizes, names as parallel sequences; only the starts sorted, ends
worked out on lookup, duplicates left in place with the bisect sent to each group's winner) so
that a .symtab of a million symbols costs a sort and a few list passes, not a tuple and a
comparison call per symbol.
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


def _positions(column, value):
    """The indices of a column (bytes, or a list) that hold value."""
    if isinstance(column, (bytes, bytearray)):
        out, at, b = [], column.find(value), bytes((value,))
        while at >= 0:
            out.append(at)
            at = column.find(b, at + 1)
        return out
    return list(compress(range(len(column)), map(eq, column, repeat(value))))


class SymbolTable:
    """Symbols (start, end, binding, name[, type]); ``find(addr)`` -> (name, addr - start) or
    None. ``names`` may be any sequence (ElfSymbols hands a lazy one: names decoded on use)."""

    def __init__(self, symbols=(), columns=None, presorted=False):
        if columns is None:
            symbols = list(symbols)
            columns = ([s[0] for s in symbols], [s[1] - s[0] for s in symbols],
                       [s[2] for s in symbols], [s[4] if len(s) > 4 else STT_FUNC for s in symbols],
                       [s[3] for s in symbols])
        self._build(*columns, presorted=presorted)

    @classmethod
    def from_columns(cls, starts, sizes, binds, types, names, presorted=False):
        """The same table from parallel sequences in file order (size 0: none given);
        ``presorted``: the starts are in order already (kallsyms.columns)."""
        return cls(columns=(starts, sizes, binds, types, names), presorted=presorted)

    def _build(self, start, size, bind, typ, names, presorted=False):
        """Only the starts are sorted (with each one's file index, X); a symbol's end is worked
        out when asked (_end: symbols__fixup_end's rule, from the next start), so a million
        symbols cost one sort, a permutation and two comparisons of neighbours."""
        n = len(start)
        order = range(n) if presorted else sorted(range(n), key=start.__getitem__)   # stable
        if presorted or all(map(eq, order, range(n))):
            S, X = start, range(n)
        else:
            S, X = (list(itemgetter(*order)(start)) if n > 1 else [start[order[0]]]), order
        self.starts, self._idx, self._size, self._names, self._n = S, X, size, names, n
        self._alias, self._gone, self._ifunc_alias, self._outer = {}, set(), set(), {}
        self._typ, self._file_start = typ, start
        self._xstarts, self._xends, self._xnames = [], [], []
        dups = list(compress(range(n - 1), map(eq, S, islice(S, 1, None)))) if n > 1 else []
        gone = self._gone
        for i in dups:              # symbols__fixup_duplicate: i and i + 1 share a start
            cur = i                 # the group's winner so far
            while cur in gone:
                cur -= 1
            x, y = X[cur], X[i + 1]
            a = (S[cur], self._end(cur), bind[x], names[x], typ[x])
            b = (S[i + 1], self._end(i + 1), bind[y], names[y], typ[y])
            if _better(a, b):
                if typ[y] == STT_GNU_IFUNC:
                    self._ifunc_alias.add(cur)      # perf: curr->ifunc_alias
                gone.add(i + 1)
                win = cur
            else:
                if typ[x] == STT_GNU_IFUNC:
                    self._ifunc_alias.add(i + 1)
                gone.add(cur)
                win = i + 1
            if (i + 2 >= n or S[i + 2] != S[i + 1]) and win != i + 1:
                self._alias[i + 1] = win    # bisect lands on a group's last: its winner
        for x in _positions(typ, STT_NOTYPE):    # a zero-size label inside the sized symbol
            if size[x]:                          # before it
                continue
            i = self._sorted_at(x)
            if i in gone:
                continue
            j = i - 1
            while j >= 0 and (j in gone or not size[X[j]]):
                j -= 1
            if j >= 0 and S[j] < S[i] < S[j] + size[X[j]]:
                self._outer[i] = j

    def _sorted_at(self, x):
        """Where file index x went in the sorted table."""
        i = bisect.bisect_left(self.starts, self._file_start[x])
        while self._idx[i] != x:
            i += 1
        return i

    def _end(self, i):
        """symbols__fixup_end: a symbol without a size ends where the next one starts (the last
        one a page past its start, rounded)."""
        z = self._size[self._idx[i]]
        if z:
            return self.starts[i] + z
        if i + 1 < self._n:
            return self.starts[i + 1]
        return (self.starts[i] + 4095) // 4096 * 4096 + 4096

    def _name(self, i):
        return self._names[self._idx[i]]

    @property
    def syms(self):
        """Every kept symbol as (start, end, name), sorted; synthesized ones after those at
        their start."""
        out = [(self.starts[i], self._end(i), self._name(i)) for i in range(self._n)
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
        return self._n - len(self._gone) + len(self._xstarts)

    def ifunc_at(self, addr):
        """The name of the symbol starting at addr when it is an IFUNC or an IFUNC's alias
        (perf's get_ifunc_name), else None."""
        i = bisect.bisect_right(self.starts, addr) - 1
        i = self._alias.get(i, i)
        if i >= 0 and self.starts[i] == addr and (
                i in self._ifunc_alias or self._typ[self._idx[i]] == STT_GNU_IFUNC):
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
        if addr >= self._end(i):
            return None
        j = self._outer.get(i)
        if j is not None and addr < self._end(j):
            i = j
        return self._name(i), addr - self.starts[i]
