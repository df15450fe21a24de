/* _dwarf.c - the C twin of symbols/dwarf_walk.PyReader: which functions hold an address, from a
 * file's DWARF, read lazily and in bounded memory.
 *
 * The definition is the Python twin (pyelftools, symbols/dwarf_walk.py); this reads the same
 * sections (handed over as buffers by symbols/debug_sections.py, already decompressed) and gives
 * the same answers:
 *
 *   Reader(sections, addr_size, little_endian, mapped)
 *                                          sections: {".debug_info": buffer, ...}; mapped: the
 *                                          names of those that are views of a read-only file map
 *   .path(addr)  -> None | (cu offset, ((die offset, ((lo, hi), ...)), ...))
 *                   the DW_TAG_subprogram holding addr, then each DW_TAG_inlined_subroutine below
 *                   it that holds it (libdw's cu_walk_functions_at, as perf 7.2 walks them)
 *   .names(die)  -> (DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name), each followed
 *                   through DW_AT_abstract_origin / DW_AT_specification (dwarf_attr_integrate)
 *   .language(cu offset) -> DW_AT_language of the unit, 0 if none
 *
 * A unit is found through .debug_aranges, else the units' own ranges. Within a unit only the
 * function DIEs with code are kept, as a preorder array (each with the index past its subtree):
 *
 *   DIEs of a unit:                       index kept:
 *     compile_unit                          [0] main       [0x10e0,0x1370) end=2
 *       subprogram main  [ranges]           [1]   now      [0x1198,0x11b0) end=2  (inlined)
 *         lexical_block                     [2] helper     ...             end=3
 *           inlined_subroutine now
 *       structure_type (looked through)
 *       subprogram helper
 *
 * The first subprogram in preorder whose ranges hold addr, then the first inlined one within its
 * subtree, and so on, is pyelftools' depth-first search. Indexes are kept for the units asked
 * last, up to a budget of bytes (LRU): memory follows the addresses asked, not the DWARF's size.
 * Every read is bounded by its section: damaged DWARF raises ValueError, never reads past it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { S_INFO, S_ABBREV, S_ARANGES, S_RANGES, S_RNGLISTS, S_ADDR, S_STR, S_LINE_STR, S_STR_OFFSETS, NSEC };
static const char *SEC_NAMES[NSEC] = {".debug_info", ".debug_abbrev", ".debug_aranges", ".debug_ranges",
    ".debug_rnglists", ".debug_addr", ".debug_str", ".debug_line_str", ".debug_str_offsets"};

/* DW_TAG, DW_AT and DW_FORM numbers (DWARF 5, section 7.5; GNU extensions from dwarf2.def) */
#define TAG_subprogram 0x2e
#define TAG_inlined_subroutine 0x1d
#define AT_sibling 0x01
#define AT_name 0x03
#define AT_low_pc 0x11
#define AT_high_pc 0x12
#define AT_language 0x13
#define AT_abstract_origin 0x31
#define AT_specification 0x47
#define AT_ranges 0x55
#define AT_linkage_name 0x6e
#define AT_str_offsets_base 0x72
#define AT_addr_base 0x73
#define AT_rnglists_base 0x74
#define AT_MIPS_linkage_name 0x2007

#define F_addr 0x01
#define F_block2 0x03
#define F_block4 0x04
#define F_data2 0x05
#define F_data4 0x06
#define F_data8 0x07
#define F_string 0x08
#define F_block 0x09
#define F_block1 0x0a
#define F_data1 0x0b
#define F_flag 0x0c
#define F_sdata 0x0d
#define F_strp 0x0e
#define F_udata 0x0f
#define F_ref_addr 0x10
#define F_ref1 0x11
#define F_ref2 0x12
#define F_ref4 0x13
#define F_ref8 0x14
#define F_ref_udata 0x15
#define F_indirect 0x16
#define F_sec_offset 0x17
#define F_exprloc 0x18
#define F_flag_present 0x19
#define F_strx 0x1a
#define F_addrx 0x1b
#define F_ref_sup4 0x1c
#define F_strp_sup 0x1d
#define F_data16 0x1e
#define F_line_strp 0x1f
#define F_ref_sig8 0x20
#define F_implicit_const 0x21
#define F_loclistx 0x22
#define F_rnglistx 0x23
#define F_ref_sup8 0x24
#define F_strx1 0x25
#define F_strx2 0x26
#define F_strx3 0x27
#define F_strx4 0x28
#define F_addrx1 0x29
#define F_addrx2 0x2a
#define F_addrx3 0x2b
#define F_addrx4 0x2c
#define F_GNU_addr_index 0x1f01
#define F_GNU_str_index 0x1f02
#define F_GNU_ref_alt 0x1f20
#define F_GNU_strp_alt 0x1f21

#define MAX_DEPTH 4096          /* DIE nesting followed; deeper is damaged */
#define MAX_INTEGRATE 16        /* abstract_origin / specification hops, as dwarf.py */
#define INDEX_BUDGET (24u << 20)  /* bytes of unit indexes kept (LRU) */
#define INDEX_MAX 512           /* and at most this many (each lookup walks the list) */
#define WINDOW 65536            /* the kernel's fault-around: pages mapped around a fault */
#define WINDOWS 256             /* windows of small reads kept before they are given back */

typedef struct { const uint8_t *p; uint64_t n; } Sec;
typedef struct { uint32_t name, form; int64_t implicit; } Spec;
typedef struct { uint64_t code; uint32_t tag; uint8_t children; uint32_t first, count; } Abbrev;

/* one unit's header, abbreviations and the bases its indexes need */
typedef struct {
    uint64_t off, end, die_off;
    int version, offsz, addrsz;
    Abbrev *abbr; size_t nabbr; Spec *specs; size_t nspecs;
    Abbrev **by_code; uint64_t max_code;
    uint64_t low_pc; int has_low;
    int64_t lang;
    uint64_t str_offsets_base, addr_base, rnglists_base;
    int has_str_offsets_base, has_addr_base, has_rnglists_base;
} Unit;

typedef struct { uint64_t die; uint32_t end, r0, nr; uint8_t inlined; } Node;
typedef struct { uint64_t lo, hi; } Range;

/* the function index of one unit */
typedef struct Index {
    uint64_t cu;
    Node *nodes; size_t nn;
    Range *ranges; size_t nr;
    size_t bytes;
    struct Index *prev, *next;      /* LRU list, most recent first */
} Index;

typedef struct { uint64_t lo, len, cu; size_t order; } Arange;
typedef struct { uint64_t lo, hi, cu; } UnitRange;

typedef struct {
    PyObject_HEAD
    Py_buffer buf[NSEC];
    Sec sec[NSEC];
    int mapped[NSEC];               /* the section is a view of the file's (read-only) map */
    uintptr_t windows[WINDOWS]; size_t nwindows;
    int addrsz;                     /* the file's address size (pyelftools' default structs) */
    int found;                      /* 0: not looked, 1: aranges, 2: unit ranges */
    Arange *ar; size_t nar;
    UnitRange *ur; size_t nur;
    uint64_t *cus; size_t ncus; int listed;
    Index *head, *tail; size_t used, count;
    Unit units[2]; int unit_ok[2]; int unit_next;   /* headers of the units last read */
} Reader;

/* ---- bounded reading ---------------------------------------------------------------------- */

typedef struct { const uint8_t *p, *end; const char *sec; int bad; } Cur;

static int fail(const char *sec, uint64_t at, const char *what) {
    PyErr_Format(PyExc_ValueError, "%s offset 0x%llx: %s", sec, (unsigned long long)at, what);
    return -1;
}

static inline int need(Cur *c, uint64_t n) {
    if ((uint64_t)(c->end - c->p) < n) { c->bad = 1; return 0; }
    return 1;
}

static uint64_t rd(Cur *c, int n) {
    uint64_t v = 0;
    if (!need(c, n)) return 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | c->p[i];        /* little-endian */
    c->p += n;
    return v;
}

static uint64_t uleb(Cur *c) {
    uint64_t v = 0; int shift = 0;
    for (;;) {
        if (!need(c, 1)) return 0;
        uint8_t b = *c->p++;
        if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) return v;
    }
}

static int64_t sleb(Cur *c) {
    int64_t v = 0; int shift = 0; uint8_t b;
    do {
        if (!need(c, 1)) return 0;
        b = *c->p++;
        if (shift < 64) v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40)) v |= -((int64_t)1 << shift);
    return v;
}

static void skip(Cur *c, uint64_t n) { if (need(c, n)) c->p += n; }

static Cur cur_in(const Sec *s, const char *name, uint64_t at, uint64_t end) {
    Cur c = {s->p + (at < s->n ? at : s->n), s->p + (end < s->n ? end : s->n), name, 0};
    if (at > s->n) c.bad = 1;
    return c;
}

/* Give back the pages of [from, to) of a section once read: a read-only file map's pages stay in
   the page cache and come back on the next touch (a minor fault), so what was read costs none of
   our memory after; bytes on the same pages are not lost (the file holds them). Not for
   decompressed sections, whose memory is their only copy. */
static void release(void *reader, int sec, uint64_t from, uint64_t to);

/* ---- units -------------------------------------------------------------------------------- */

static void unit_free(Unit *u) {
    PyMem_Free(u->abbr); PyMem_Free(u->specs); PyMem_Free(u->by_code);
    memset(u, 0, sizeof *u);
}

static int abbrev_cmp(const void *a, const void *b) {
    uint64_t x = ((const Abbrev *)a)->code, y = ((const Abbrev *)b)->code;
    return x < y ? -1 : x > y;
}

/* the unit's abbreviation table, from abbrev_off to its 0 code; a later duplicate code wins,
   as pyelftools' dict of codes */
static int read_abbrevs(Reader *r, Unit *u, uint64_t abbrev_off) {
    Sec *s = &r->sec[S_ABBREV];
    if (abbrev_off >= s->n) return fail(".debug_abbrev", abbrev_off, "abbreviations past the section's end");
    Cur c = cur_in(s, ".debug_abbrev", abbrev_off, s->n);
    size_t cap = 64, scap = 256;
    u->abbr = PyMem_Malloc(cap * sizeof(Abbrev));
    u->specs = PyMem_Malloc(scap * sizeof(Spec));
    if (!u->abbr || !u->specs) { PyErr_NoMemory(); return -1; }
    for (;;) {
        uint64_t code = uleb(&c);
        if (c.bad) return fail(".debug_abbrev", abbrev_off, "abbreviation table cut off");
        if (code == 0) break;
        if (u->nabbr == cap) {
            Abbrev *n = PyMem_Realloc(u->abbr, (cap *= 2) * sizeof(Abbrev));
            if (!n) { PyErr_NoMemory(); return -1; }
            u->abbr = n;
        }
        Abbrev *a = &u->abbr[u->nabbr++];
        a->code = code;
        a->tag = (uint32_t)uleb(&c);
        a->children = (uint8_t)rd(&c, 1);
        a->first = (uint32_t)u->nspecs; a->count = 0;
        for (;;) {
            uint64_t name = uleb(&c), form = uleb(&c);
            int64_t imp = 0;
            if (form == F_implicit_const) imp = sleb(&c);
            if (c.bad) return fail(".debug_abbrev", abbrev_off, "abbreviation table cut off");
            if (name == 0 && form == 0) break;
            if (u->nspecs == scap) {
                Spec *n = PyMem_Realloc(u->specs, (scap *= 2) * sizeof(Spec));
                if (!n) { PyErr_NoMemory(); return -1; }
                u->specs = n;
            }
            u->specs[u->nspecs++] = (Spec){(uint32_t)name, (uint32_t)form, imp};
            a->count++;
        }
    }
    release(r, S_ABBREV, abbrev_off, (uint64_t)(c.p - s->p));
    /* equal codes: the table's later entry (its specs further on) is the one looked up */
    qsort(u->abbr, u->nabbr, sizeof(Abbrev), abbrev_cmp);
    uint64_t max = u->nabbr ? u->abbr[u->nabbr - 1].code : 0;
    if (max < 4 * (uint64_t)u->nabbr + 1024) {
        u->by_code = PyMem_Calloc(max + 1, sizeof(Abbrev *));
        if (!u->by_code) { PyErr_NoMemory(); return -1; }
        for (size_t i = 0; i < u->nabbr; i++) {
            Abbrev *a = &u->abbr[i], *old = u->by_code[a->code];
            if (!old || a->first > old->first) u->by_code[a->code] = a;
        }
        u->max_code = max;
    }
    return 0;
}

static Abbrev *abbrev_of(Unit *u, uint64_t code) {
    if (u->by_code) return code <= u->max_code ? u->by_code[code] : NULL;
    size_t lo = 0, hi = u->nabbr;
    Abbrev *best = NULL;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (u->abbr[mid].code < code) lo = mid + 1; else hi = mid;
    }
    for (; lo < u->nabbr && u->abbr[lo].code == code; lo++)
        if (!best || u->abbr[lo].first > best->first) best = &u->abbr[lo];
    return best;
}

/* an attribute's value: u (numbers, offsets, indexes), s (strings read in place) */
typedef struct { uint32_t form; uint64_t u; int64_t sv; const char *s; int set; } Val;

/* read one attribute's value of the given form at c (DW_FORM_indirect followed) */
static int read_form(Reader *r, Unit *u, Cur *c, uint32_t form, int64_t implicit, Val *v) {
    for (int hops = 0; form == F_indirect; hops++) {
        form = (uint32_t)uleb(c);
        if (hops > 8 || c->bad) { c->bad = 1; return -1; }
    }
    v->form = form; v->s = NULL; v->sv = 0; v->set = 1;
    switch (form) {
    case F_addr: v->u = rd(c, u->addrsz); break;
    case F_block2: v->u = 0; skip(c, rd(c, 2)); break;
    case F_block4: v->u = 0; skip(c, rd(c, 4)); break;
    case F_block: case F_exprloc: v->u = 0; skip(c, uleb(c)); break;
    case F_block1: v->u = 0; skip(c, rd(c, 1)); break;
    case F_data1: case F_flag: case F_ref1: case F_strx1: case F_addrx1: v->u = rd(c, 1); break;
    case F_data2: case F_ref2: case F_strx2: case F_addrx2: v->u = rd(c, 2); break;
    case F_strx3: case F_addrx3: v->u = rd(c, 3); break;
    case F_data4: case F_ref4: case F_strx4: case F_addrx4: case F_ref_sup4: v->u = rd(c, 4); break;
    case F_data8: case F_ref8: case F_ref_sig8: case F_ref_sup8: v->u = rd(c, 8); break;
    case F_data16: v->u = 0; skip(c, 16); break;
    case F_sdata: v->sv = sleb(c); v->u = (uint64_t)v->sv; break;
    case F_udata: case F_ref_udata: case F_strx: case F_addrx: case F_loclistx: case F_rnglistx:
    case F_GNU_addr_index: case F_GNU_str_index:
        v->u = uleb(c); break;
    case F_strp: case F_line_strp: case F_sec_offset: case F_strp_sup: case F_GNU_ref_alt:
    case F_GNU_strp_alt:
        v->u = rd(c, u->offsz); break;
    case F_ref_addr: v->u = rd(c, u->version <= 2 ? u->addrsz : u->offsz); break;
    case F_string: {
        const uint8_t *z = memchr(c->p, 0, (size_t)(c->end - c->p));
        if (!z) { c->bad = 1; return -1; }
        v->s = (const char *)c->p; v->u = 0; c->p = z + 1;
        break;
    }
    case F_flag_present: v->u = 1; break;
    case F_implicit_const: v->sv = implicit; v->u = (uint64_t)implicit; break;
    default: c->bad = 1; return -1;
    }
    return c->bad ? -1 : 0;
}

/* a string of .debug_str / .debug_line_str at off, or NULL */
static const char *str_at(Reader *r, int which, uint64_t off) {
    Sec *s = &r->sec[which];
    if (!s->p || off >= s->n || !memchr(s->p + off, 0, (size_t)(s->n - off))) return NULL;
    return (const char *)s->p + off;
}

static int is_addr_form(uint32_t f) {
    return f == F_addr || f == F_addrx || f == F_addrx1 || f == F_addrx2 || f == F_addrx3 ||
           f == F_addrx4 || f == F_GNU_addr_index;
}

/* .debug_addr entry idx of the unit (pyelftools DWARFInfo.get_addr) */
static int get_addr(Reader *r, Unit *u, uint64_t idx, uint64_t *out) {
    Sec *s = &r->sec[S_ADDR];
    if (!u->has_addr_base) return fail(".debug_info", u->off, "the unit needs DW_AT_addr_base");
    if (!s->p) return fail(".debug_info", u->off, "no .debug_addr section for an indexed address");
    uint64_t at = u->addr_base + idx * (uint64_t)u->addrsz;
    if (idx > s->n || at + u->addrsz > s->n || at < u->addr_base)
        return fail(".debug_addr", at, "address index past the section's end");
    Cur c = cur_in(s, ".debug_addr", at, s->n);
    *out = rd(&c, u->addrsz);
    return 0;
}

/* an address value: DW_FORM_addr as it is, DW_FORM_addrx* through .debug_addr */
static int addr_value(Reader *r, Unit *u, Val *v, uint64_t *out) {
    if (v->form == F_addr || v->form == F_GNU_addr_index) { *out = v->u; return 0; }
    return get_addr(r, u, v->u, out);
}

/* a string value of a name attribute: 1 and *s set, 0 for a form that is no string here */
static int str_value(Reader *r, Unit *u, Val *v, const char **s) {
    uint64_t off;
    switch (v->form) {
    case F_string: *s = v->s; return 1;
    case F_strp: *s = str_at(r, S_STR, v->u); break;
    case F_line_strp: *s = str_at(r, S_LINE_STR, v->u); break;
    case F_strx: case F_strx1: case F_strx2: case F_strx3: case F_strx4: {
        Sec *so = &r->sec[S_STR_OFFSETS];
        if (!u->has_str_offsets_base) return fail(".debug_info", u->off, "the unit needs DW_AT_str_offsets_base");
        if (!so->p) return fail(".debug_info", u->off, "no .debug_str_offsets section for an indexed string");
        uint64_t at = u->str_offsets_base + v->u * (uint64_t)u->offsz;
        if (v->u > so->n || at + u->offsz > so->n)
            return fail(".debug_str_offsets", at, "string index past the section's end");
        Cur c = cur_in(so, ".debug_str_offsets", at, so->n);
        off = rd(&c, u->offsz);
        *s = str_at(r, S_STR, off);
        break;
    }
    case F_GNU_strp_alt: case F_strp_sup:
        return fail(".debug_info", u->off, "a string of the supplementary file (dwz): not read");
    default:
        return fail(".debug_info", u->off, "a name attribute whose form is no string");
    }
    if (!*s) return fail(".debug_str", 0, "string offset past the section's end");
    return 1;
}

/* the unit whose header is at off: header, abbreviations, its top DIE's bases */
static int read_unit(Reader *r, uint64_t off, Unit *u) {
    Sec *s = &r->sec[S_INFO];
    memset(u, 0, sizeof *u);
    Cur c = cur_in(s, ".debug_info", off, s->n);
    uint64_t len = rd(&c, 4);
    u->offsz = 4;
    if (len == 0xffffffffu) { len = rd(&c, 8); u->offsz = 8; }
    if (c.bad || len > (uint64_t)(c.end - c.p)) return fail(".debug_info", off, "unit length past the section's end");
    u->off = off;
    u->end = (uint64_t)(c.p - s->p) + len;
    c.end = s->p + u->end;
    u->version = (int)rd(&c, 2);
    uint64_t abbrev_off;
    if (u->version >= 5) {
        int type = (int)rd(&c, 1);
        u->addrsz = (int)rd(&c, 1);
        abbrev_off = rd(&c, u->offsz);
        if (type == 4 || type == 5) skip(&c, 8);              /* skeleton, split_compile: dwo_id */
        else if (type == 2 || type == 6) skip(&c, 8 + u->offsz);   /* type units */
    } else {
        abbrev_off = rd(&c, u->offsz);
        u->addrsz = (int)rd(&c, 1);
    }
    if (c.bad) return fail(".debug_info", off, "unit header cut off");
    if (u->version < 2 || u->version > 5) return fail(".debug_info", off, "unsupported DWARF version");
    if (u->addrsz != 4 && u->addrsz != 8) return fail(".debug_info", off, "unsupported address size");
    u->die_off = (uint64_t)(c.p - s->p);
    if (read_abbrevs(r, u, abbrev_off) < 0) { unit_free(u); return -1; }
    /* the top DIE: bases first (indexed values of the top DIE itself are read after them) */
    uint64_t code = uleb(&c);
    if (c.bad) { unit_free(u); return fail(".debug_info", u->die_off, "top DIE cut off"); }
    if (code == 0) return 0;
    Abbrev *a = abbrev_of(u, code);
    if (!a) { unit_free(u); return fail(".debug_info", u->die_off, "unknown abbreviation code"); }
    Val low = {0};
    for (uint32_t i = 0; i < a->count; i++) {
        Spec *sp = &u->specs[a->first + i];
        Val v;
        if (read_form(r, u, &c, sp->form, sp->implicit, &v) < 0) {
            unit_free(u); return fail(".debug_info", u->die_off, "top DIE cut off or of an unknown form");
        }
        switch (sp->name) {
        case AT_low_pc: low = v; break;
        case AT_language: u->lang = v.form == F_sdata ? v.sv : (int64_t)v.u; break;
        case AT_str_offsets_base: u->str_offsets_base = v.u; u->has_str_offsets_base = 1; break;
        case AT_addr_base: u->addr_base = v.u; u->has_addr_base = 1; break;
        case AT_rnglists_base: u->rnglists_base = v.u; u->has_rnglists_base = 1; break;
        }
    }
    if (low.set) {
        if (is_addr_form(low.form)) {
            if (addr_value(r, u, &low, &u->low_pc) < 0) { unit_free(u); return -1; }
        } else u->low_pc = low.u;
        u->has_low = 1;
    }
    release(r, S_INFO, off, (uint64_t)(c.p - s->p));
    return 0;
}

/* the header of the unit at off, from the two kept, else read into the older slot */
static Unit *unit_at(Reader *r, uint64_t off) {
    for (int i = 0; i < 2; i++)
        if (r->unit_ok[i] && r->units[i].off == off) return &r->units[i];
    int i = r->unit_next; r->unit_next ^= 1;
    if (r->unit_ok[i]) unit_free(&r->units[i]);
    r->unit_ok[i] = 0;
    if (read_unit(r, off, &r->units[i]) < 0) return NULL;
    r->unit_ok[i] = 1;
    return &r->units[i];
}

/* ---- ranges ------------------------------------------------------------------------------- */

typedef struct { Range *v; size_t n, cap; } Ranges;

static int push_range(Ranges *rs, uint64_t lo, uint64_t hi) {
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? rs->cap * 2 : 16;
        Range *n = PyMem_Realloc(rs->v, cap * sizeof(Range));
        if (!n) { PyErr_NoMemory(); return -1; }
        rs->v = n; rs->cap = cap;
    }
    rs->v[rs->n++] = (Range){lo, hi};
    return 0;
}

/* the entries of the range list at off, relative ones from base (pyelftools RangeLists: the
   section is chosen by which exist, both: by the unit's version) */
static int range_list(Reader *r, Unit *u, uint64_t off, uint64_t base, Ranges *out) {
    int v5;
    if (r->sec[S_RNGLISTS].p && !r->sec[S_RANGES].p) v5 = 1;
    else if (r->sec[S_RANGES].p && !r->sec[S_RNGLISTS].p) v5 = 0;
    else if (r->sec[S_RANGES].p) v5 = u->version >= 5;
    else return 0;
    int asz = r->addrsz;
    if (!v5) {
        Sec *s = &r->sec[S_RANGES];
        if (off >= s->n) return fail(".debug_ranges", off, "range list past the section's end");
        Cur c = cur_in(s, ".debug_ranges", off, s->n);
        uint64_t max = asz == 8 ? UINT64_MAX : 0xffffffffu;
        for (;;) {
            uint64_t b = rd(&c, asz), e = rd(&c, asz);
            if (c.bad) return fail(".debug_ranges", off, "range list cut off");
            if (b == 0 && e == 0) { release(r, S_RANGES, off, (uint64_t)(c.p - s->p)); return 0; }
            if (b == max) base = e;
            else if (push_range(out, base + b, base + e) < 0) return -1;
        }
    }
    Sec *s = &r->sec[S_RNGLISTS];
    if (off >= s->n) return fail(".debug_rnglists", off, "range list past the section's end");
    Cur c = cur_in(s, ".debug_rnglists", off, s->n);
    for (;;) {
        int kind = (int)rd(&c, 1);
        uint64_t a = 0, b = 0, lo, hi;
        switch (kind) {                                 /* the operands of each DW_RLE_* entry */
        case 1: a = uleb(&c); break;
        case 2: case 3: case 4: a = uleb(&c); b = uleb(&c); break;
        case 5: a = rd(&c, asz); break;
        case 6: a = rd(&c, asz); b = rd(&c, asz); break;
        case 7: a = rd(&c, asz); b = uleb(&c); break;
        }
        if (c.bad) return fail(".debug_rnglists", off, "range list cut off");
        switch (kind) {
        case 0: release(r, S_RNGLISTS, off, (uint64_t)(c.p - s->p)); return 0;   /* end_of_list */
        case 1: if (get_addr(r, u, a, &base) < 0) return -1; break; /* base_addressx */
        case 2:                                                     /* startx_endx */
            if (get_addr(r, u, a, &lo) < 0 || get_addr(r, u, b, &hi) < 0 || push_range(out, lo, hi) < 0) return -1;
            break;
        case 3:                                                     /* startx_length */
            if (get_addr(r, u, a, &lo) < 0 || push_range(out, lo, lo + b) < 0) return -1;
            break;
        case 4: if (push_range(out, base + a, base + b) < 0) return -1; break;   /* offset_pair */
        case 5: base = a; break;                                    /* base_address */
        case 6: if (push_range(out, a, b) < 0) return -1; break;   /* start_end */
        case 7: if (push_range(out, a, a + b) < 0) return -1; break;   /* start_length */
        default: return fail(".debug_rnglists", off, "unknown range list entry");
        }
    }
}

/* a DW_FORM_rnglistx index to its offset (the unit's offsets table at DW_AT_rnglists_base) */
static int rnglistx(Reader *r, Unit *u, uint64_t idx, uint64_t *out) {
    Sec *s = &r->sec[S_RNGLISTS];
    if (!u->has_rnglists_base) return fail(".debug_info", u->off, "the unit needs DW_AT_rnglists_base");
    if (!s->p) return fail(".debug_info", u->off, "no .debug_rnglists section for a range list index");
    uint64_t at = u->rnglists_base + idx * (uint64_t)u->offsz;
    if (idx > s->n || at + u->offsz > s->n) return fail(".debug_rnglists", at, "range list index past the section's end");
    Cur c = cur_in(s, ".debug_rnglists", at, s->n);
    *out = u->rnglists_base + rd(&c, u->offsz);
    return 0;
}

/* the ranges of a DIE from its low/high pc or DW_AT_ranges (dwarf_walk.PyReader._ranges) */
static int die_ranges(Reader *r, Unit *u, Val *lo, Val *hi, Val *rg, uint64_t base, Ranges *out) {
    if (lo->set && hi->set && is_addr_form(lo->form)) {
        uint64_t l, h;
        if (addr_value(r, u, lo, &l) < 0) return -1;
        if (is_addr_form(hi->form)) { if (addr_value(r, u, hi, &h) < 0) return -1; }
        else if (hi->form == F_sdata && hi->sv < 0) h = (uint64_t)-hi->sv > l ? 0 : l - (uint64_t)-hi->sv;
        else h = l + hi->u;
        return push_range(out, l, h);
    }
    if (!rg->set) return 0;
    uint64_t off = rg->u;
    if (rg->form == F_rnglistx) { if (rnglistx(r, u, rg->u, &off) < 0) return -1; }
    else if (rg->form != F_sec_offset && rg->form != F_data4 && rg->form != F_data8) return 0;
    return range_list(r, u, off, base, out);
}

/* ---- finding the unit --------------------------------------------------------------------- */

static int arange_cmp(const void *a, const void *b) {
    const Arange *x = a, *y = b;
    if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int unitrange_cmp(const void *a, const void *b) {
    const UnitRange *x = a, *y = b;
    if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
    if (x->hi != y->hi) return x->hi < y->hi ? -1 : 1;
    return x->cu < y->cu ? -1 : x->cu > y->cu;
}

/* .debug_aranges: every (address, length) but each set's terminator (pyelftools ARanges) */
static int read_aranges(Reader *r) {
    Sec *s = &r->sec[S_ARANGES];
    size_t cap = 256;
    PyMem_Free(r->ar); r->nar = 0;              /* (again after a damaged section's error) */
    r->ar = PyMem_Malloc(cap * sizeof(Arange));
    if (!r->ar) { PyErr_NoMemory(); return -1; }
    uint64_t off = 0;
    while (off < s->n) {
        Cur c = cur_in(s, ".debug_aranges", off, s->n);
        uint64_t len = rd(&c, 4); int offsz = 4;
        if (len == 0xffffffffu) { len = rd(&c, 8); offsz = 8; }
        uint64_t next = (uint64_t)(c.p - s->p) + len;
        rd(&c, 2);                                          /* version */
        uint64_t cu = rd(&c, offsz);
        int asz = (int)rd(&c, 1), seg = (int)rd(&c, 1);
        if (c.bad) return fail(".debug_aranges", off, "header cut off");
        if (seg != 0) return fail(".debug_aranges", off, "segmented addresses: not read");
        if (asz != 4 && asz != 8) return fail(".debug_aranges", off, "unsupported address size");
        uint64_t at = (uint64_t)(c.p - s->p), t = 2 * (uint64_t)asz;
        at = (at + t - 1) / t * t;
        c = cur_in(s, ".debug_aranges", at, s->n);
        for (;;) {
            uint64_t a = rd(&c, asz), l = rd(&c, asz);
            if (c.bad) return fail(".debug_aranges", at, "address ranges cut off");
            if (a == 0 && l == 0) break;
            if (r->nar == cap) {
                Arange *n = PyMem_Realloc(r->ar, (cap *= 2) * sizeof(Arange));
                if (!n) { PyErr_NoMemory(); return -1; }
                r->ar = n;
            }
            r->ar[r->nar] = (Arange){a, l, cu, r->nar};
            r->nar++;
        }
        if (next <= off) return fail(".debug_aranges", off, "set length 0");
        off = next;
    }
    qsort(r->ar, r->nar, sizeof(Arange), arange_cmp);
    return 0;
}

/* every unit's header offset, in section order (for references into other units) */
static int list_units(Reader *r) {
    Sec *s = &r->sec[S_INFO];
    size_t cap = 64;
    PyMem_Free(r->cus); r->ncus = 0;
    r->cus = PyMem_Malloc(cap * sizeof(uint64_t));
    if (!r->cus) { PyErr_NoMemory(); return -1; }
    uint64_t off = 0;
    while (off < s->n) {
        Cur c = cur_in(s, ".debug_info", off, s->n);
        uint64_t len = rd(&c, 4);
        if (len == 0xffffffffu) len = rd(&c, 8);
        if (c.bad || len > (uint64_t)(c.end - c.p)) return fail(".debug_info", off, "unit length past the section's end");
        if (r->ncus == cap) {
            uint64_t *n = PyMem_Realloc(r->cus, (cap *= 2) * sizeof(uint64_t));
            if (!n) { PyErr_NoMemory(); return -1; }
            r->cus = n;
        }
        r->cus[r->ncus++] = off;
        release(r, S_INFO, off, (uint64_t)(c.p - s->p));
        off = (uint64_t)(c.p - s->p) + len;
    }
    r->listed = 1;
    return 0;
}

/* without aranges: each unit's own ranges (Go gives DW_AT_ranges from the unit's low_pc) */
static int read_unit_ranges(Reader *r) {
    if (!r->listed && list_units(r) < 0) return -1;
    size_t cap = 64;
    PyMem_Free(r->ur); r->nur = 0;
    r->ur = PyMem_Malloc(cap * sizeof(UnitRange));
    if (!r->ur) { PyErr_NoMemory(); return -1; }
    for (size_t i = 0; i < r->ncus; i++) {
        Unit *u = unit_at(r, r->cus[i]);
        if (!u) return -1;
        Sec *s = &r->sec[S_INFO];
        Cur c = cur_in(s, ".debug_info", u->die_off, u->end);
        uint64_t code = uleb(&c);
        if (c.bad) return fail(".debug_info", u->die_off, "top DIE cut off");
        if (code == 0) continue;
        Abbrev *a = abbrev_of(u, code);
        if (!a) return fail(".debug_info", u->die_off, "unknown abbreviation code");
        Val lo = {0}, hi = {0}, rg = {0};
        for (uint32_t k = 0; k < a->count; k++) {
            Spec *sp = &u->specs[a->first + k];
            Val v;
            if (read_form(r, u, &c, sp->form, sp->implicit, &v) < 0)
                return fail(".debug_info", u->die_off, "top DIE cut off or of an unknown form");
            if (sp->name == AT_low_pc) lo = v;
            else if (sp->name == AT_high_pc) hi = v;
            else if (sp->name == AT_ranges) rg = v;
        }
        Ranges rs = {0};
        if (die_ranges(r, u, &lo, &hi, &rg, u->has_low ? u->low_pc : 0, &rs) < 0) { PyMem_Free(rs.v); return -1; }
        for (size_t k = 0; k < rs.n; k++) {
            if (r->nur == cap) {
                UnitRange *n = PyMem_Realloc(r->ur, (cap *= 2) * sizeof(UnitRange));
                if (!n) { PyMem_Free(rs.v); PyErr_NoMemory(); return -1; }
                r->ur = n;
            }
            r->ur[r->nur++] = (UnitRange){rs.v[k].lo, rs.v[k].hi, u->off};
        }
        PyMem_Free(rs.v);
    }
    qsort(r->ur, r->nur, sizeof(UnitRange), unitrange_cmp);
    return 0;
}

/* the unit holding addr: 1 and *cu, 0 when none, -1 on error */
static int unit_of(Reader *r, uint64_t addr, uint64_t *cu) {
    if (!r->found) {
        if (r->sec[S_ARANGES].p && r->sec[S_ARANGES].n) {
            if (read_aranges(r) < 0) return -1;
        }
        if (r->nar) r->found = 1;
        else {
            if (read_unit_ranges(r) < 0) return -1;
            r->found = 2;
        }
    }
    if (r->found == 1) {
        /* the last entry starting at or below addr (bisect_right - 1; pyelftools wraps to the
           last entry when none does) */
        size_t lo = 0, hi = r->nar;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (r->ar[mid].lo <= addr) lo = mid + 1; else hi = mid;
        }
        Arange *a = &r->ar[lo ? lo - 1 : r->nar - 1];
        if (a->lo <= addr && addr - a->lo < a->len) { *cu = a->cu; return 1; }
        return 0;
    }
    for (size_t i = 0; i < r->nur; i++)
        if (r->ur[i].lo <= addr && addr < r->ur[i].hi) { *cu = r->ur[i].cu; return 1; }
    return 0;
}

/* ---- the function index of a unit --------------------------------------------------------- */

static void index_free(Index *ix) {
    if (!ix) return;
    PyMem_Free(ix->nodes); PyMem_Free(ix->ranges); PyMem_Free(ix);
}

static void lru_unlink(Reader *r, Index *ix) {
    if (ix->prev) ix->prev->next = ix->next; else r->head = ix->next;
    if (ix->next) ix->next->prev = ix->prev; else r->tail = ix->prev;
    ix->prev = ix->next = NULL;
}

static void lru_front(Reader *r, Index *ix) {
    ix->next = r->head; ix->prev = NULL;
    if (r->head) r->head->prev = ix;
    r->head = ix;
    if (!r->tail) r->tail = ix;
}

/* walk every DIE of the unit once: the function DIEs with ranges, in preorder */
static Index *build_index(Reader *r, uint64_t cu_off) {
    Unit *u = unit_at(r, cu_off);
    if (!u) return NULL;
    Sec *s = &r->sec[S_INFO];
    Index *ix = PyMem_Calloc(1, sizeof(Index));
    size_t ncap = 64;
    Ranges rs = {0};
    int32_t *open = PyMem_Malloc(MAX_DEPTH * sizeof(int32_t));   /* node index open at a depth, or -1 */
    if (!ix || !open) { PyMem_Free(ix); PyMem_Free(open); PyErr_NoMemory(); return NULL; }
    ix->cu = cu_off;
    ix->nodes = PyMem_Malloc(ncap * sizeof(Node));
    if (!ix->nodes) goto nomem;
    uint64_t base = u->has_low ? u->low_pc : 0;
    Cur c = cur_in(s, ".debug_info", u->die_off, u->end);
    int depth = 0;
    int top = 1;
    while (c.p < c.end) {
        uint64_t at = (uint64_t)(c.p - s->p);
        uint64_t code = uleb(&c);
        if (c.bad) { fail(".debug_info", at, "DIE cut off"); goto err; }
        if (code == 0) {                                /* end of the children of open[depth-1] */
            if (depth == 0) break;                      /* an empty unit */
            depth--;
            if (open[depth] >= 0) ix->nodes[open[depth]].end = (uint32_t)ix->nn;
            if (depth == 0) break;
            continue;
        }
        Abbrev *a = abbrev_of(u, code);
        if (!a) { fail(".debug_info", at, "unknown abbreviation code"); goto err; }
        Val lo = {0}, hi = {0}, rg = {0};
        int func = !top && (a->tag == TAG_subprogram || a->tag == TAG_inlined_subroutine);
        for (uint32_t k = 0; k < a->count; k++) {
            Spec *sp = &u->specs[a->first + k];
            Val v;
            if (read_form(r, u, &c, sp->form, sp->implicit, &v) < 0) {
                fail(".debug_info", at, "DIE cut off or of an unknown form"); goto err;
            }
            if (!func) continue;
            if (sp->name == AT_low_pc) lo = v;
            else if (sp->name == AT_high_pc) hi = v;
            else if (sp->name == AT_ranges) rg = v;
        }
        int32_t node = -1;
        if (func) {
            size_t r0 = rs.n;
            if (die_ranges(r, u, &lo, &hi, &rg, base, &rs) < 0) goto err;
            if (rs.n > r0) {
                if (ix->nn == ncap) {
                    Node *n = PyMem_Realloc(ix->nodes, (ncap *= 2) * sizeof(Node));
                    if (!n) goto nomem;
                    ix->nodes = n;
                }
                if (ix->nn >= INT32_MAX || rs.n > UINT32_MAX) { fail(".debug_info", at, "too many functions in one unit"); goto err; }
                node = (int32_t)ix->nn;
                ix->nodes[node] = (Node){at, (uint32_t)node + 1, (uint32_t)r0, (uint32_t)(rs.n - r0),
                                         a->tag == TAG_inlined_subroutine};
                ix->nn++;
            }
        }
        top = 0;
        if (a->children) {
            if (depth >= MAX_DEPTH) { fail(".debug_info", at, "DIEs nested too deep"); goto err; }
            open[depth++] = node;
        } else if (depth == 0)
            break;                                      /* a top DIE without children */
    }
    while (depth > 0) {                                 /* a unit cut short: close what is open */
        depth--;
        if (open[depth] >= 0) ix->nodes[open[depth]].end = (uint32_t)ix->nn;
    }
    PyMem_Free(open);
    ix->ranges = rs.v; ix->nr = rs.n;
    ix->bytes = sizeof(Index) + ix->nn * sizeof(Node) + rs.cap * sizeof(Range);
    return ix;
nomem:
    PyErr_NoMemory();
err:
    PyMem_Free(open); PyMem_Free(rs.v); index_free(ix);
    return NULL;
}

static int uptr_cmp(const void *a, const void *b) {
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* the windows kept for later are given back together, each run of them in one call */
static void flush_windows(Reader *r) {
    qsort(r->windows, r->nwindows, sizeof(uintptr_t), uptr_cmp);
    for (size_t i = 0; i < r->nwindows;) {
        size_t j = i + 1;
        while (j < r->nwindows && r->windows[j] <= r->windows[j - 1] + WINDOW) j++;
        madvise((void *)r->windows[i], r->windows[j - 1] + WINDOW - r->windows[i], MADV_DONTNEED);
        i = j;
    }
    r->nwindows = 0;
}

/* A range of a unit walked whole goes back at once; small reads (a DIE, a string, a range list)
   are noted by their 64 KiB window (the kernel maps that much around each page faulted in:
   fault_around_bytes) and go back WINDOWS at a time, so that a window read again and again in
   between costs no call. */
static void release(void *reader, int sec, uint64_t from, uint64_t to) {
    Reader *r = reader;
    if (!r->mapped[sec] || to <= from) return;
    uintptr_t lo = (uintptr_t)(r->sec[sec].p + from) & ~(uintptr_t)(WINDOW - 1);
    uintptr_t hi = ((uintptr_t)(r->sec[sec].p + to) + WINDOW - 1) & ~(uintptr_t)(WINDOW - 1);
    if (hi - lo > 4 * WINDOW) { madvise((void *)lo, hi - lo, MADV_DONTNEED); return; }
    for (uintptr_t w = lo; w < hi; w += WINDOW) {
        int seen = 0;                                   /* among the last 8 noted */
        for (size_t k = r->nwindows; k > 0 && k + 8 > r->nwindows && !seen; k--)
            seen = r->windows[k - 1] == w;
        if (seen) continue;
        if (r->nwindows == WINDOWS) flush_windows(r);
        r->windows[r->nwindows++] = w;
    }
}

static Index *index_of(Reader *r, uint64_t cu) {
    for (Index *ix = r->head; ix; ix = ix->next)
        if (ix->cu == cu) {
            if (ix != r->head) { lru_unlink(r, ix); lru_front(r, ix); }
            return ix;
        }
    Index *ix = build_index(r, cu);
    if (!ix) return NULL;
    for (int i = 0; i < 2; i++)
        if (r->unit_ok[i] && r->units[i].off == cu) release(r, S_INFO, r->units[i].die_off, r->units[i].end);
    lru_front(r, ix);
    r->used += ix->bytes; r->count++;
    while ((r->used > INDEX_BUDGET || r->count > INDEX_MAX) && r->tail && r->tail != ix) {
        Index *old = r->tail;
        lru_unlink(r, old);
        r->used -= old->bytes; r->count--;
        index_free(old);
    }
    return ix;
}

static int holds(Index *ix, Node *n, uint64_t addr) {
    for (uint32_t i = 0; i < n->nr; i++) {
        Range *g = &ix->ranges[n->r0 + i];
        if (g->lo <= addr && addr < g->hi) return 1;
    }
    return 0;
}

/* the first node in [from, to) of that kind holding addr, or -1 */
static long first(Index *ix, size_t from, size_t to, uint64_t addr, int inlined) {
    for (size_t i = from; i < to; i++)
        if (ix->nodes[i].inlined == inlined && holds(ix, &ix->nodes[i], addr)) return (long)i;
    return -1;
}

/* ---- the Python type ---------------------------------------------------------------------- */

static void Reader_dealloc(Reader *r) {
    while (r->head) { Index *ix = r->head; lru_unlink(r, ix); index_free(ix); }
    for (int i = 0; i < 2; i++) if (r->unit_ok[i]) unit_free(&r->units[i]);
    PyMem_Free(r->ar); PyMem_Free(r->ur); PyMem_Free(r->cus);
    for (int i = 0; i < NSEC; i++) if (r->buf[i].obj) PyBuffer_Release(&r->buf[i]);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static int Reader_init(Reader *r, PyObject *args, PyObject *kw) {
    PyObject *secs, *mapped = NULL; int addrsz = 8, little = 1;
    static char *kws[] = {"sections", "addr_size", "little_endian", "mapped", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|ipO", kws, &PyDict_Type, &secs, &addrsz, &little, &mapped)) return -1;
    for (int i = 0; i < NSEC && mapped && mapped != Py_None; i++) {
        PyObject *name = PyUnicode_FromString(SEC_NAMES[i]);
        if (!name) return -1;
        int in = PySequence_Contains(mapped, name);
        Py_DECREF(name);
        if (in < 0) return -1;
        r->mapped[i] = in;
    }
    if (!little) { PyErr_SetString(PyExc_NotImplementedError, "big-endian DWARF (the Python twin reads it)"); return -1; }
    if (addrsz != 4 && addrsz != 8) { PyErr_SetString(PyExc_ValueError, "addr_size must be 4 or 8"); return -1; }
    r->addrsz = addrsz;
    for (int i = 0; i < NSEC; i++) {
        PyObject *b = PyDict_GetItemString(secs, SEC_NAMES[i]);
        if (!b || b == Py_None) continue;
        if (r->buf[i].obj) PyBuffer_Release(&r->buf[i]);
        if (PyObject_GetBuffer(b, &r->buf[i], PyBUF_SIMPLE) < 0) return -1;
        r->sec[i].p = r->buf[i].buf;
        r->sec[i].n = (uint64_t)r->buf[i].len;
        if (!r->sec[i].p) r->sec[i].p = (const uint8_t *)"";
    }
    if (!r->sec[S_INFO].p) { PyErr_SetString(PyExc_ValueError, "no .debug_info"); return -1; }
    return 0;
}

static PyObject *Reader_path(Reader *r, PyObject *arg) {
    uint64_t addr = PyLong_AsUnsignedLongLong(arg), cu;
    if (addr == (uint64_t)-1 && PyErr_Occurred()) return NULL;
    int got = unit_of(r, addr, &cu);
    if (got < 0) return NULL;
    if (!got) Py_RETURN_NONE;
    if (cu >= r->sec[S_INFO].n) return PyErr_Format(PyExc_ValueError, ".debug_aranges: unit offset 0x%llx past .debug_info", (unsigned long long)cu);
    Index *ix = index_of(r, cu);
    if (!ix) return NULL;
    long i = first(ix, 0, ix->nn, addr, 0);
    if (i < 0) Py_RETURN_NONE;
    PyObject *path = PyList_New(0);
    if (!path) return NULL;
    while (i >= 0) {
        Node *n = &ix->nodes[i];
        PyObject *rs = PyTuple_New(n->nr);
        if (!rs) goto err;
        for (uint32_t k = 0; k < n->nr; k++) {
            Range *g = &ix->ranges[n->r0 + k];
            PyObject *t = Py_BuildValue("(KK)", (unsigned long long)g->lo, (unsigned long long)g->hi);
            if (!t) { Py_DECREF(rs); goto err; }
            PyTuple_SET_ITEM(rs, k, t);
        }
        PyObject *item = Py_BuildValue("(KN)", (unsigned long long)n->die, rs);
        if (!item || PyList_Append(path, item) < 0) { Py_XDECREF(item); goto err; }
        Py_DECREF(item);
        i = first(ix, (size_t)i + 1, n->end, addr, 1);
    }
    PyObject *t = PyList_AsTuple(path);
    Py_DECREF(path);
    if (!t) return NULL;
    return Py_BuildValue("(KN)", (unsigned long long)cu, t);
err:
    Py_DECREF(path);
    return NULL;
}

/* the unit holding a DIE offset: the indexed one, else by the list of unit offsets */
static Unit *unit_holding(Reader *r, uint64_t die) {
    for (int i = 0; i < 2; i++)
        if (r->unit_ok[i] && r->units[i].die_off <= die && die < r->units[i].end) return &r->units[i];
    if (!r->listed && list_units(r) < 0) return NULL;
    size_t lo = 0, hi = r->ncus;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->cus[mid] <= die) lo = mid + 1; else hi = mid;
    }
    if (!lo) { fail(".debug_info", die, "reference before the first unit"); return NULL; }
    Unit *u = unit_at(r, r->cus[lo - 1]);
    if (u && !(u->die_off <= die && die < u->end)) { fail(".debug_info", die, "reference outside any unit's DIEs"); return NULL; }
    return u;
}

/* the wanted attributes of the DIE at off: name attributes, and where it stands for another */
typedef struct { Val link, mips, name, origin, spec; } DieAttrs;

static int die_attrs(Reader *r, uint64_t off, Unit **up, DieAttrs *d) {
    Unit *u = unit_holding(r, off);
    if (!u) return -1;
    *up = u;
    memset(d, 0, sizeof *d);
    Cur c = cur_in(&r->sec[S_INFO], ".debug_info", off, u->end);
    uint64_t code = uleb(&c);
    if (c.bad) return fail(".debug_info", off, "DIE cut off");
    if (code == 0) return 0;
    Abbrev *a = abbrev_of(u, code);
    if (!a) return fail(".debug_info", off, "unknown abbreviation code");
    for (uint32_t k = 0; k < a->count; k++) {
        Spec *sp = &u->specs[a->first + k];
        Val v;
        if (read_form(r, u, &c, sp->form, sp->implicit, &v) < 0)
            return fail(".debug_info", off, "DIE cut off or of an unknown form");
        switch (sp->name) {                 /* a repeated attribute: the last one (a dict) */
        case AT_linkage_name: d->link = v; break;
        case AT_MIPS_linkage_name: d->mips = v; break;
        case AT_name: d->name = v; break;
        case AT_abstract_origin: d->origin = v; break;
        case AT_specification: d->spec = v; break;
        }
    }
    release(r, S_INFO, off, (uint64_t)(c.p - r->sec[S_INFO].p));
    return 0;
}

/* the DIE a reference attribute points at (pyelftools DIE.get_DIE_from_attribute) */
static int ref_target(Unit *u, Val *v, uint64_t *out) {
    switch (v->form) {
    case F_ref1: case F_ref2: case F_ref4: case F_ref8: case F_ref_udata:
        *out = v->u + u->off; return 0;
    case F_ref_addr: *out = v->u; return 0;
    default:
        return fail(".debug_info", u->off, "a reference of a form not followed (type unit, dwz)");
    }
}

/* one name attribute of the DIE or the DIEs it stands for, as bytes, or None */
static PyObject *integrate(Reader *r, uint64_t off, int which) {
    for (int hop = 0; hop < MAX_INTEGRATE; hop++) {
        Unit *u; DieAttrs d;
        if (die_attrs(r, off, &u, &d) < 0) return NULL;
        Val *v = which == 0 ? &d.link : which == 1 ? &d.mips : &d.name;
        if (v->set) {
            const char *s;
            if (str_value(r, u, v, &s) < 0) return NULL;
            PyObject *out = PyBytes_FromString(s);
            for (int k = S_STR; k <= S_LINE_STR; k++)
                if (r->sec[k].p && (const uint8_t *)s >= r->sec[k].p && (const uint8_t *)s < r->sec[k].p + r->sec[k].n)
                    release(r, k, (uint64_t)((const uint8_t *)s - r->sec[k].p),
                            (uint64_t)((const uint8_t *)s - r->sec[k].p) + strlen(s) + 1);
            return out;
        }
        Val *ref = d.origin.set ? &d.origin : d.spec.set ? &d.spec : NULL;
        if (!ref) Py_RETURN_NONE;
        if (ref_target(u, ref, &off) < 0) return NULL;
        if (off >= r->sec[S_INFO].n) return PyErr_Format(PyExc_ValueError, ".debug_info offset 0x%llx: reference past the section's end", (unsigned long long)off);
    }
    Py_RETURN_NONE;
}

static PyObject *Reader_names(Reader *r, PyObject *arg) {
    uint64_t off = PyLong_AsUnsignedLongLong(arg);
    if (off == (uint64_t)-1 && PyErr_Occurred()) return NULL;
    PyObject *out = PyTuple_New(3);
    if (!out) return NULL;
    for (int i = 0; i < 3; i++) {
        PyObject *v = integrate(r, off, i);
        if (!v) { Py_DECREF(out); return NULL; }
        PyTuple_SET_ITEM(out, i, v);
    }
    return out;
}

static PyObject *Reader_language(Reader *r, PyObject *arg) {
    uint64_t off = PyLong_AsUnsignedLongLong(arg);
    if (off == (uint64_t)-1 && PyErr_Occurred()) return NULL;
    Unit *u = unit_at(r, off);
    if (!u) return NULL;
    return PyLong_FromLongLong(u->lang);
}

static PyObject *Reader_held(Reader *r, PyObject *noarg) {
    return Py_BuildValue("(nn)", (Py_ssize_t)r->count, (Py_ssize_t)r->used);
}

static PyMethodDef Reader_methods[] = {
    {"path", (PyCFunction)Reader_path, METH_O, "(unit offset, ((die offset, ranges), ...)) of the functions holding addr, or None"},
    {"names", (PyCFunction)Reader_names, METH_O, "(linkage name, MIPS linkage name, name) of a DIE, integrated; bytes or None"},
    {"language", (PyCFunction)Reader_language, METH_O, "DW_AT_language of the unit at an offset (0: none)"},
    {"held", (PyCFunction)Reader_held, METH_NOARGS, "(unit indexes kept, their bytes)"},
    {NULL}
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "deferstitch._dwarf.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The functions holding an address, from DWARF sections (the twin of dwarf_walk.PyReader).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Reader_init,
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_methods = Reader_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_dwarf",
    "The C twin of symbols/dwarf_walk.py: functions and inlined calls at an address.", -1, NULL};

PyMODINIT_FUNC PyInit__dwarf(void) {
    if (PyType_Ready(&ReaderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ReaderType);
    if (PyModule_AddObject(m, "Reader", (PyObject *)&ReaderType) < 0) { Py_DECREF(&ReaderType); Py_DECREF(m); return NULL; }
    if (PyModule_AddIntConstant(m, "INDEX_BUDGET", INDEX_BUDGET) < 0) { Py_DECREF(m); return NULL; }
    return m;
}
