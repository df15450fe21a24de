"""perf's fix-ups of a symbol table (util/symbol.c), each on a few made-up symbols: what
deferstitch/symbols/table.py keeps, extends and names."""
from deferstitch.symbols.table import GLOBAL, LOCAL, WEAK, STT_FUNC, STT_GNU_IFUNC, STT_NOTYPE, \
    SymbolTable


def test_label_inside_a_function_leaves_it_the_function_addresses():
    """glibc 2.43's libc6-dbg: __syscall_cancel_arch [0x9ced0, +47), the label
    __syscall_cancel_arch_end at +0x2e: perf 7.2 prints __syscall_cancel_arch+0x2e there, the
    label only past the function's end (tests/test_libc_dbg.py has the real file)."""
    t = SymbolTable([(0x9ced0, 0x9ced0, LOCAL, "__syscall_cancel_arch_start", STT_NOTYPE),
                     (0x9ced0, 0x9ceff, LOCAL, "__syscall_cancel_arch", STT_FUNC),
                     (0x9cefe, 0x9cefe, LOCAL, "__syscall_cancel_arch_end", STT_NOTYPE),
                     (0x9cf00, 0x9cf29, LOCAL, "__init_sched_fifo_prio", STT_FUNC)])
    assert t.find(0x9ced0) == ("__syscall_cancel_arch", 0)
    assert t.find(0x9cefe) == ("__syscall_cancel_arch", 0x2e)
    assert t.find(0x9ceff) == ("__syscall_cancel_arch_end", 1)
    assert t.find(0x9cf00) == ("__init_sched_fifo_prio", 0)


def test_a_label_alone_names_its_code():
    """ld.so's _dl_start_user: a label outside any sized symbol is extended to the next."""
    t = SymbolTable([(0x100, 0x100, GLOBAL, "_dl_start_user", STT_NOTYPE),
                     (0x140, 0x150, GLOBAL, "next", STT_FUNC)])
    assert t.find(0x13f) == ("_dl_start_user", 0x3f)


def test_a_typed_symbol_wins_over_a_label_at_its_address():
    """perf 6.13's choose_best_symbol (8c2eafbbfd78): both sized, the STT_NOTYPE one loses even
    against a local, a weak or a longer name."""
    t = SymbolTable([(0x100, 0x120, GLOBAL, "a_much_longer_label", STT_NOTYPE),
                     (0x100, 0x120, WEAK, "f", STT_FUNC)])
    assert t.find(0x104) == ("f", 4)


def test_ifunc_alias_names_the_irelative_plt_slot():
    """symbols__fixup_duplicate marks the winner over an STT_GNU_IFUNC symbol an IFUNC alias;
    get_ifunc_name takes the IFUNC or its alias at the resolver's address, nothing else."""
    t = SymbolTable([(0x200, 0x280, LOCAL, "__strchrnul", STT_GNU_IFUNC),
                     (0x200, 0x280, LOCAL, "__strchrnul_ifunc", STT_FUNC),
                     (0x300, 0x380, GLOBAL, "memcpy@@GLIBC_2.14", STT_GNU_IFUNC),
                     (0x400, 0x480, GLOBAL, "plain", STT_FUNC),
                     (0x500, 0x580, LOCAL, "__mempcpy_ifunc", STT_FUNC),
                     (0x500, 0x580, LOCAL, "__mempcpy", STT_GNU_IFUNC)])
    assert t.ifunc_at(0x200) == "__strchrnul_ifunc"
    assert t.ifunc_at(0x300) == "memcpy@@GLIBC_2.14"
    assert t.ifunc_at(0x500) == "__mempcpy_ifunc"
    assert t.ifunc_at(0x400) is None and t.ifunc_at(0x304) is None


def test_plt_entries_come_after_the_symbols_at_their_address():
    t = SymbolTable([(0x100, 0x110, GLOBAL, "f", STT_FUNC),
                     (0x9ced0, 0x9ceff, LOCAL, "g", STT_FUNC),
                     (0x9cefe, 0x9cefe, LOCAL, "g_end", STT_NOTYPE)])
    t.add_sized([(0x50, 0x60, "memcpy@plt"), (0x100, 0x110, "x@plt")])
    assert t.find(0x55) == ("memcpy@plt", 5) and t.find(0x100) == ("x@plt", 0)
    assert t.find(0x9cefe) == ("g", 0x2e)      # the label's function found past the insertions
    assert [s[2] for s in t.syms] == ["memcpy@plt", "f", "x@plt", "g", "g_end"]
