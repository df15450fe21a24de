"""Names for addresses: process maps over time (and, later, ELF symbols and kallsyms)."""
