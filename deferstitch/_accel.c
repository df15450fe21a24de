/* deferstitch._accel: the stitch pipeline's per-record work in C, for the common perf.data.
 *
 *     data bytes -> framing -> FINISHED_ROUND sorter -> feed -> stitcher -> hold-back FIFO -> output
 *
 * The rules are the Python modules', step for step, and the Python modules stay their
 * definition: perfdata/reader.py (framing), perfdata/sorter.py (order), perfdata/feed.py (the
 * feed and its FIFO), stitcher.py (the cookie rules, drawn there), report.py (the counts).
 * The cookie rules themselves are _stitchcore.h's, which the trace.dat feed (_tracefeed.c)
 * shares: this file gives them its samples, stacks and tasks (the callbacks in "the stitcher"
 * below) and keeps the report's cells and lists; the outcome keys, KEEP_FIRST and the modes
 * are _twin.h's. perfdata/engine.py drives this engine; tests/test_accel.py checks that both
 * give the same bytes, reports and stacks on every capture, on random streams and on damaged
 * files.
 *
 * The engine never decides anything about damage, and never starts over. It frames the
 * ordinary records straight from the reader's buffer and stops before anything else (a record
 * cut by the buffer's end, smaller than its header, with a payload after its size): the Python
 * reader frames that one and hands it back (feed() again, or foreign() for records passed as
 * they are). Metadata records, compressed containers, sample layouts it does not walk and every
 * record it finds damaged go to Python callbacks (the reader's note, Decompressor, feed.decode),
 * so each is decoded in one place and damage raises the Python path's FormatError, after the
 * engine delivered what the Python path delivers before it (failed()).
 *
 * Outputs: MODE_FILE writes the stitched data section to the output file itself when given
 * one (sink(): no bytes object per chunk), else returns it as bytes; when foreign records came,
 * a list of them and bytes, for the Python writer to write in turn; MODE_EVENTS returns, in the
 * order the Python feed calls observe() and the stitcher's sink, the side-band records
 * (perfdata.reader.Record) and one tuple per resolved sample
 * (pid, tid, comm, ips as native u64 bytes, period, attr index); MODE_ORDERED adds (cpu, time,
 * number, the sample's own ip when its attr has no callchain) to each, and the number again
 * when the sample's turn comes in time order (outputs
 * that print in order: perf script's text); MODE_COUNTED counts the samples in C per (pid, tid, comm, ips,
 * attr index, outcome) while the side-band records stand still (so the names do too), and gives
 * one (pid, tid, comm, ips, period sum or None, attr index, samples, outcome key, first time,
 * last time, how many were stitched after their stack) per distinct one, in first-seen order,
 * before the next side-band record and at the end of each output (folded stacks, pprof: they
 * sum samples anyway); MODE_CHAINS counts the same way, with the chain's context markers kept in
 * the ips (a stitched sample's user frames after PERF_CONTEXT_USER): the flame graph colours
 * kernel and user frames by them. MODE_OUTCOMES gives, in time order as the Python feed hands
 * out.sample() and out.record() to its output, one (time, cpu, tid, comm, outcome key) per sample
 * and the LOST and LOST_SAMPLES records (report --html's timeline). MODE_NONE only counts.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the stitcher: _stitchcore.h's rules over this engine's samples, stacks and tasks */
typedef struct Engine Engine;
#define SC_TID int64_t
#define SC_COOKIE uint64_t
#define SC_CTX Engine
#include "_stitchcore.h"      /* and _twin.h: the outcome keys, KEEP_FIRST, the modes */

/* the record types (T_*) are _twin.h's, held to abi/consts.py */

#define CTX_DEFERRED ((uint64_t)-640)
#define CTX_USER ((uint64_t)-512)
#define CTX_MAX ((uint64_t)-4095)

#define COUNTED(e) ((e)->mode == MODE_COUNTED || (e)->mode == MODE_CHAINS)
#define EVENTS(e) ((e)->mode != MODE_FILE && (e)->mode != MODE_NONE && (e)->mode != MODE_OUTCOMES)
#define POOL_CLASSES 1025          /* rclass(0xFFFF) + 1 */
#define POOL_MAX ((size_t)64 << 20)

static PyObject *Limit;

static inline uint64_t rd64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline uint32_t rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint16_t rd16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }

/* ---- records, samples, stacks, tasks ---------------------------------------------------- */
typedef struct Rec {
    uint64_t offset;
    PyObject *obj;              /* a record the Python reader framed (AUXTRACE, ...): passed as is */
    uint32_t size;
    uint16_t type, misc;
    unsigned char data[];
} Rec;

typedef struct Stack {
    ScStack sc;                             /* cookie, time, served: the rules' */
    int refs;                               /* the stitcher's and each stitched sample's */
    uint32_t n;
    uint64_t frames[];
} Stack;

typedef struct Samp {
    ScSamp sc;                              /* tid, time, cookie, outcome, ...: the rules' */
    Rec *rec;
    int64_t pid, cpu;
    uint64_t period;
    int has_tid, has_pid, has_cpu, has_period;
    int entry;
    uint64_t seq;                           /* the sample's number: MODE_ORDERED names it twice */
    uint32_t chain_off, chain_end, knr;     /* kernel part: the first knr ips of the chain */
    Stack *user;
    PyObject *comm;
    struct Samp *pool_next;                 /* the free list (samp_alloc) */
} Samp;

/* ---- a u64 -> pointer map: linear probing, backward-shift deletion ----------------------- */
typedef struct { uint64_t key; void *val; } Slot;
typedef struct { Slot *s; size_t cap, n; } Map;

static inline size_t hash64(uint64_t k) { k ^= k >> 33; k *= 0xff51afd7ed558ccdULL; k ^= k >> 33; return (size_t)k; }

static int map_init(Map *m, size_t cap) {
    m->s = calloc(cap, sizeof(Slot));
    m->cap = cap; m->n = 0;
    return m->s ? 0 : -1;
}

static void *map_get(Map *m, uint64_t key) {
    size_t mask = m->cap - 1, i = hash64(key) & mask;
    while (m->s[i].val) {
        if (m->s[i].key == key) return m->s[i].val;
        i = (i + 1) & mask;
    }
    return NULL;
}

static int map_put(Map *m, uint64_t key, void *val) {
    if (2 * (m->n + 1) > m->cap) {
        Map bigger;
        if (map_init(&bigger, m->cap * 2) < 0) return -1;
        for (size_t j = 0; j < m->cap; j++)
            if (m->s[j].val) map_put(&bigger, m->s[j].key, m->s[j].val);
        free(m->s);
        *m = bigger;
    }
    size_t mask = m->cap - 1, i = hash64(key) & mask;
    while (m->s[i].val) {
        if (m->s[i].key == key) { m->s[i].val = val; return 0; }
        i = (i + 1) & mask;
    }
    m->s[i].key = key; m->s[i].val = val; m->n++;
    return 0;
}

static void map_del(Map *m, uint64_t key) {
    size_t mask = m->cap - 1, i = hash64(key) & mask;
    while (m->s[i].val && m->s[i].key != key) i = (i + 1) & mask;
    if (!m->s[i].val) return;
    m->s[i].val = NULL; m->n--;
    size_t j = i;
    for (;;) {                      /* shift back what probed past the hole */
        j = (j + 1) & mask;
        if (!m->s[j].val) return;
        size_t home = hash64(m->s[j].key) & mask;
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            m->s[i] = m->s[j]; m->s[j].val = NULL; i = j;
        }
    }
}

/* ---- report cells: (tid, cpu, key) -> samples, in first-seen order ----------------------- */
typedef struct {
    int64_t tid, cpu;
    int tid_none, cpu_none;
    uint64_t n[NKEYS];
    uint64_t first[NKEYS];      /* when (tid, cpu, key) was first counted: report._cells order */
    PyObject *comm;             /* comm of the latest counted sample of this cell that had one */
    uint64_t comm_seq;
} Cell;

/* ---- the sample layout of one attr (offsets from abi/sample.py's SampleLayout) ------------ */
typedef struct {
    int simple;                 /* no READ, nothing after the callchain: all the engine walks */
    int time_off, tid_off, cpu_off, period_off;     /* -1: absent */
    int ip_off;                 /* PERF_SAMPLE_IP: perf script shows it for a sample without a chain */
    int prefix_end, has_chain;
    int trailer_size, tr_time, tr_tid;              /* trailer offsets from the end; -1 absent */
    int has_trailer;            /* sample_id_all and a non-empty trailer */
} Layout;

typedef struct { uint64_t time, seq; Rec *rec; } HItem;
/* MODE_COUNTED, MODE_CHAINS: the samples of one (pid, tid, comm, ips, attr, outcome) since the last flush */
typedef struct {
    uint64_t hash;
    int64_t pid, tid;
    int has_pid, has_tid, entry, key, has_period, has_time;
    PyObject *comm;
    uint32_t n;
    uint64_t *ips;
    uint64_t count, period, tmin, tmax, after;
    uint64_t bin;               /* the time slice (bins()), UINT64_MAX untimed; 0 without slices */
} Agg;
typedef struct { Rec *rec; Samp *s; } FItem;
typedef struct { uint64_t time, cookie; int64_t tid; int has_time, has_tid, reason; } Noted;

/* selection.Selection in C: each list absent (has_*: 0) or what perf's option named */
typedef struct {
    int on, has_pids, has_tids, has_cpus;
    int64_t *pids, *tids, *cpus;
    size_t npids, ntids, ncpus, nranges;
    uint64_t *ranges;           /* (start, end) pairs, 0 an open end: perf_time__ranges_skip_sample */
    PyObject *comms;            /* a set of names, or NULL */
} Select;

struct Engine {
    PyObject_HEAD
    int mode;
    uint64_t window, max_queued;
    unsigned char keep[65536];
    PyObject *note_cb, *decompress_cb, *record_cls, *decode_cb, *format_error;
    /* plan */
    Layout *lay; int nlay;
    int sample_id_at, trailer_id_from_end;
    Map by_id;                  /* sample id -> attr index + 1 */
    /* framing */
    unsigned char *zin; size_t zin_len, zin_cap;    /* decompressed bytes not yet framed */
    uint64_t zoffset;
    /* sorter */
    HItem *heap; size_t hn, hcap;
    HItem *run; size_t rhead, rlen, rcap;     /* the sorter's in-order run (q_push) */
    uint64_t seq, next_flush, max_time, last_flushed;
    int have_next_flush;
    uint64_t rounds, unordered, max_queued_seen, forced_flushes;
    /* feed */
    uint64_t counts[65536], nrecords;
    PyObject *big_counts;       /* record types past 16 bits (foreign records): type -> count */
    PyObject *comms;            /* tid -> comm (dict) */
    Map comm_of;                /* the same, for the samples' lookups: tid -> comm (a reference) */
    Map exited;                 /* tids whose EXIT came, for --comm: perf forgets the thread */
    FItem *fifo; size_t fhead, flen, fcap;
    uint64_t deferred_without_tid;
    /* the selection (selection.py): which samples are counted and output, if given */
    Select sel;
    /* stitcher */
    ScStitcher sc;
    Map tasks;                  /* tid -> ScTask (only while something waits or it has a stack) */
    /* report: the rules' counts are in sc */
    Noted first_unmatched[KEEP_FIRST]; int nfirst;
    Noted orphan_list[KEEP_FIRST]; int norphan;
    Cell *cells; size_t ncells, ccap;
    Map cellmap;                /* hashed (tid, cpu) -> cell index + 1 (see cell_of) */
    uint64_t count_seq, sample_seq;
    /* output */
    unsigned char *out; size_t out_len, out_cap;
    int out_fd;                 /* MODE_FILE: the file the engine writes itself (sink()), or -1 */
    PyObject *sink_error;       /* errno -> the exception a failed write raises */
    uint64_t sunk;              /* bytes written to out_fd */
    PyObject *events;
    Agg *aggs; size_t nagg, aggcap;
    size_t *aslot; size_t acap;     /* open addressing over aggs: index + 1, 0 empty */
    uint64_t *scratch; size_t scap;
    uint64_t bin_t0, bin_width;     /* bins(): aggregates kept apart per time slice (0: none) */
    uint64_t dropped[65536];
    uint64_t rewritten, truncated, truncated_frames;   /* truncated: stitched samples cut to fit */
    int failed, finished, flushed;
    int cookie_seen;            /* a deferred chain with its cookie came: the file's layout */
    int decode_damage;          /* the error came from the Python decoders (see damaged()) */
    /* pools: freed records and samples, reused (records by size class of 64 bytes) */
    Rec *rpool[POOL_CLASSES]; size_t rpool_bytes;
    Samp *spool;
};

/* ---- pools for queued records and samples ------------------------------------------------
 * Every record the sorter or the hold-back FIFO holds is a copy, freed a little later, and each
 * sample has its Samp: millions of malloc/free pairs of a few sizes, a fifth of `stitch` in
 * glibc's bins. Freed ones go to a free list (records per 64-byte size class, linked through
 * ``obj``; samples through ``pool_next``) and are taken again first; at most POOL_MAX bytes of
 * records are kept, so a burst of one size does not hold memory another size cannot use. */
static inline size_t rclass(uint32_t size) { return ((size_t)size + 63) >> 6; }

static Rec *rec_alloc(Engine *e, uint32_t size) {
    size_t c = rclass(size);
    Rec *r = e->rpool[c];
    if (r) {
        e->rpool[c] = (Rec *)r->obj;
        e->rpool_bytes -= c << 6;
    } else if (!(r = malloc(sizeof(Rec) + (c << 6)))) {
        PyErr_NoMemory();
        return NULL;
    }
    r->obj = NULL; r->size = size;
    return r;
}

static void rec_free(Engine *e, Rec *r) {
    if (!r) return;
    Py_CLEAR(r->obj);
    size_t c = rclass(r->size);
    if (e->rpool_bytes + (c << 6) > POOL_MAX) { free(r); return; }
    r->obj = (PyObject *)e->rpool[c];
    e->rpool[c] = r;
    e->rpool_bytes += c << 6;
}

static Samp *samp_alloc(Engine *e) {
    Samp *s = e->spool;
    if (!s) return calloc(1, sizeof(Samp));
    e->spool = s->pool_next;
    memset(s, 0, sizeof(*s));
    return s;
}

static void pools_free(Engine *e) {
    for (size_t c = 0; c < POOL_CLASSES; c++)
        while (e->rpool[c]) { Rec *r = e->rpool[c]; e->rpool[c] = (Rec *)r->obj; free(r); }
    e->rpool_bytes = 0;
    while (e->spool) { Samp *s = e->spool; e->spool = s->pool_next; free(s); }
}

/* A limit of the engine's (not damage): Limit(offset, message); engine.py makes it the error. */
static PyObject *fail(Engine *e, const char *msg, unsigned long long at) {
    e->failed = 1;
    PyObject *v = Py_BuildValue("(Ks)", at, msg);
    if (v) { PyErr_SetObject(Limit, v); Py_DECREF(v); }
    return NULL;
}
#define FAIL(e, msg, at) do { fail((e), msg, (unsigned long long)(at)); return -1; } while (0)
/* damage in a record nothing owns yet: the Python decoders give the error (damaged()) */
#define DAMAGED(e, r) do { damaged((e), (r)); return -1; } while (0)

/* ---- small growable buffers ------------------------------------------------------------- */
static int reserve(unsigned char **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 1 << 16;
    while (c < need) c *= 2;
    unsigned char *n = realloc(*buf, c);
    if (!n) { PyErr_NoMemory(); return -1; }
    *buf = n; *cap = c;
    return 0;
}

static int out_put(Engine *e, const void *p, size_t n) {
    if (reserve(&e->out, &e->out_cap, e->out_len + n) < 0) return -1;
    memcpy(e->out + e->out_len, p, n);
    e->out_len += n;
    return 0;
}

/* ---- plan: layouts and the id lookup, from Python --------------------------------------- */
static int geti(PyObject *t, Py_ssize_t i) {
    PyObject *o = PyTuple_GET_ITEM(t, i);
    return o == Py_None ? -1 : (int)PyLong_AsLong(o);
}

/* plan = (sample_id_at or None, trailer_id_from_end or None, {id: index}, [layout tuple]) */
static int load_plan(Engine *e, PyObject *plan) {
    if (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != 4) {
        PyErr_SetString(PyExc_TypeError, "plan must be a 4-tuple");
        return -1;
    }
    e->sample_id_at = geti(plan, 0);
    e->trailer_id_from_end = geti(plan, 1);
    PyObject *ids = PyTuple_GET_ITEM(plan, 2), *lays = PyTuple_GET_ITEM(plan, 3);
    Py_ssize_t n = PyList_Size(lays);
    if (n < 0) return -1;
    Layout *l = calloc(n ? n : 1, sizeof(Layout));
    if (!l) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(lays, i);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 12) {
            free(l);
            PyErr_SetString(PyExc_TypeError, "layout must be a 12-tuple");
            return -1;
        }
        l[i].simple = geti(t, 0); l[i].time_off = geti(t, 1); l[i].tid_off = geti(t, 2);
        l[i].cpu_off = geti(t, 3); l[i].period_off = geti(t, 4); l[i].prefix_end = geti(t, 5);
        l[i].has_chain = geti(t, 6); l[i].trailer_size = geti(t, 7); l[i].tr_time = geti(t, 8);
        l[i].tr_tid = geti(t, 9); l[i].has_trailer = geti(t, 10); l[i].ip_off = geti(t, 11);
    }
    if (PyErr_Occurred()) { free(l); return -1; }
    free(e->lay);
    e->lay = l; e->nlay = (int)n;
    free(e->by_id.s);
    if (map_init(&e->by_id, 64) < 0) { PyErr_NoMemory(); return -1; }
    PyObject *k, *v; Py_ssize_t pos = 0;
    while (PyDict_Next(ids, &pos, &k, &v)) {
        uint64_t id = PyLong_AsUnsignedLongLongMask(k);
        long idx = PyLong_AsLong(v);
        if (map_put(&e->by_id, id, (void *)(intptr_t)(idx + 1)) < 0) { PyErr_NoMemory(); return -1; }
    }
    return PyErr_Occurred() ? -1 : 0;
}

/* evlist.for_sample: -1 when the id is unknown */
static int entry_of_sample(Engine *e, Rec *r) {
    if (e->nlay == 0) return -1;
    if (e->sample_id_at < 0) return 0;
    if (r->size < (uint32_t)e->sample_id_at + 8) return -1;
    intptr_t v = (intptr_t)map_get(&e->by_id, rd64(r->data + e->sample_id_at));
    return v ? (int)(v - 1) : -1;
}

/* evlist.for_trailer: the first attr when the id is unknown */
static int entry_of_trailer(Engine *e, Rec *r) {
    if (e->nlay == 0) return -1;
    if (e->trailer_id_from_end < 0) return 0;
    if (r->size < 8 + (uint32_t)e->trailer_id_from_end) return 0;
    intptr_t v = (intptr_t)map_get(&e->by_id, rd64(r->data + r->size - e->trailer_id_from_end));
    return v ? (int)(v - 1) : 0;
}

/* ---- forward declarations ---------------------------------------------------------------- */
static int feed_record(Engine *e, Rec *r);
static int drain(Engine *e);
static PyObject *make_record(Engine *e, Rec *r);

/* ---- the stitcher: _stitchcore.h's callbacks ------------------------------------------------
 * Tasks live in e->tasks while something waits or they have a stack; a stack is shared by the
 * stitcher and each sample stitched with it (refs). */
static void stack_put(Stack *st) { if (st && --st->refs == 0) free(st); }

static ScTask *sc_task_get(Engine *e, int64_t tid) { return map_get(&e->tasks, (uint64_t)tid); }

static ScTask *sc_task_new(Engine *e, int64_t tid) {
    ScTask *t = calloc(1, sizeof(ScTask));
    if (!t || map_put(&e->tasks, (uint64_t)tid, t) < 0) { free(t); PyErr_NoMemory(); return NULL; }
    t->tid = tid;
    return t;
}

static void sc_task_idle(Engine *e, ScTask *t) {
    map_del(&e->tasks, (uint64_t)t->tid);
    free(t);
}

static void sc_stack_drop(Engine *e, ScStack *k) { stack_put((Stack *)k); }

static void sc_attach(Engine *e, ScSamp *s, ScStack *k) {
    ((Samp *)s)->user = (Stack *)k;
    ((Stack *)k)->refs++;
}

static int sc_orphan(Engine *e, int64_t tid, ScStack *k) {
    if (e->norphan < KEEP_FIRST) {
        Noted *o = &e->orphan_list[e->norphan++];
        o->time = k->time; o->has_time = k->has_time; o->tid = tid; o->has_tid = 1;
        o->cookie = k->cookie;
    }
    return 0;
}

/* stitcher.lost_reason: lost records while it waited, or not */
static int sc_lost_reason(Engine *e, ScTask *t, ScSamp *s, uint64_t time, int reason) { return reason; }

/* ---- the report (report.py: StitchReport.count) --------------------------------------- */
static inline uint64_t cell_key(int64_t tid, int64_t cpu, int tid_none, int cpu_none) {
    return ((uint64_t)(uint32_t)tid << 32) ^ (uint64_t)(uint32_t)cpu
           ^ ((uint64_t)tid_none << 62) ^ ((uint64_t)cpu_none << 63);
}

static Cell *cell_of(Engine *e, Samp *s) {
    int tn = !s->has_tid, cn = !s->has_cpu;
    uint64_t key = cell_key(s->sc.tid, s->cpu, tn, cn);
    size_t mask = e->cellmap.cap - 1, i = hash64(key) & mask;
    while (e->cellmap.s[i].val) {          /* key collisions are resolved by comparing the cell */
        Cell *c = &e->cells[(intptr_t)e->cellmap.s[i].val - 1];
        if (e->cellmap.s[i].key == key && c->tid_none == tn && c->cpu_none == cn
                && (tn || c->tid == s->sc.tid) && (cn || c->cpu == s->cpu))
            return c;
        i = (i + 1) & mask;
    }
    if (e->ncells == e->ccap) {
        size_t cap = e->ccap ? 2 * e->ccap : 256;
        Cell *n = realloc(e->cells, cap * sizeof(Cell));
        if (!n) { PyErr_NoMemory(); return NULL; }
        e->cells = n; e->ccap = cap;
    }
    Cell *c = &e->cells[e->ncells++];
    memset(c, 0, sizeof(*c));
    c->tid = tn ? 0 : s->sc.tid; c->cpu = cn ? 0 : s->cpu; c->tid_none = tn; c->cpu_none = cn;
    if (2 * (e->cellmap.n + 1) > e->cellmap.cap) {       /* rebuild the index at twice the size */
        free(e->cellmap.s);
        if (map_init(&e->cellmap, e->cellmap.cap * 2) < 0) { PyErr_NoMemory(); return NULL; }
        for (size_t j = 0; j < e->ncells; j++) {
            Cell *x = &e->cells[j];
            uint64_t k = cell_key(x->tid, x->cpu, x->tid_none, x->cpu_none);
            size_t m = e->cellmap.cap - 1, p = hash64(k) & m;
            while (e->cellmap.s[p].val) p = (p + 1) & m;
            e->cellmap.s[p].key = k; e->cellmap.s[p].val = (void *)(intptr_t)(j + 1);
            e->cellmap.n++;
        }
    } else {
        e->cellmap.s[i].key = key; e->cellmap.s[i].val = (void *)(intptr_t)e->ncells;
        e->cellmap.n++;
    }
    return c;
}

static PyObject *sample_ips(Samp *s) {
    const unsigned char *chain = s->rec->data + s->chain_off + 8;
    uint32_t n = 0, cap = s->knr + (s->sc.outcome == K_STITCHED ? s->user->n : 0);
    PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)8 * cap);
    if (!b) return NULL;
    char *p = PyBytes_AS_STRING(b);
    for (uint32_t i = 0; i < s->knr; i++) {
        uint64_t ip = rd64(chain + 8 * i);
        if (ip < CTX_MAX) { memcpy(p + 8 * n, &ip, 8); n++; }
    }
    if (s->sc.outcome == K_STITCHED) {
        memcpy(p + 8 * n, s->user->frames, 8 * (size_t)s->user->n);
        n += s->user->n;
    }
    if (n != cap) _PyBytes_Resize(&b, (Py_ssize_t)8 * n);
    return b;
}

static PyObject *opt_i64(int has, int64_t v) { if (!has) Py_RETURN_NONE; return PyLong_FromLongLong(v); }
static PyObject *opt_u64(int has, uint64_t v) { if (!has) Py_RETURN_NONE; return PyLong_FromUnsignedLongLong(v); }

static int flush_aggs(Engine *e) {
    int rc = 0;
    for (size_t i = 0; i < e->nagg; i++) {
        Agg *a = &e->aggs[i];
        if (rc == 0) {
            PyObject *ips = PyBytes_FromStringAndSize((const char *)a->ips, (Py_ssize_t)8 * a->n);
            PyObject *t = ips ? Py_BuildValue("(NNONNiKiNNK)", opt_i64(a->has_pid, a->pid), opt_i64(a->has_tid, a->tid),
                                              a->comm ? a->comm : Py_None, ips, opt_u64(a->has_period, a->period),
                                              a->entry, (unsigned long long)a->count, a->key,
                                              opt_u64(a->has_time, a->tmin), opt_u64(a->has_time, a->tmax),
                                              (unsigned long long)a->after) : NULL;
            if (!t || PyList_Append(e->events, t) < 0) rc = -1;
            Py_XDECREF(t);
        }
        Py_XDECREF(a->comm);
        free(a->ips);
    }
    e->nagg = 0;
    if (e->aslot) memset(e->aslot, 0, e->acap * sizeof(size_t));
    return rc;
}

static inline uint64_t mix(uint64_t h, uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); return h; }

/* Count sample s into its aggregate (MODE_COUNTED; MODE_CHAINS with the context markers). */
static int count_sample(Engine *e, Samp *s, int k) {
    const unsigned char *chain = s->rec->data + s->chain_off + 8;
    int markers = e->mode == MODE_CHAINS;
    size_t cap = s->knr + (k == K_STITCHED ? s->user->n + 1 : 0), n = 0;
    if (cap > e->scap || !e->scratch) {         /* never NULL, even for a sample without frames */
        size_t c = cap > 64 ? cap : 64;
        uint64_t *b = realloc(e->scratch, c * 8);
        if (!b) { PyErr_NoMemory(); return -1; }
        e->scratch = b; e->scap = c;
    }
    uint64_t *ips = e->scratch;
    for (uint32_t i = 0; i < s->knr; i++) {
        uint64_t ip = rd64(chain + 8 * i);
        if (ip < CTX_MAX || markers) ips[n++] = ip;
    }
    if (k == K_STITCHED) {
        if (markers) ips[n++] = CTX_USER;
        memcpy(ips + n, s->user->frames, 8 * (size_t)s->user->n);
        n += s->user->n;
    }
    uint64_t bin = 0;             /* the page's timeline: one aggregate per time slice */
    if (e->bin_width)
        bin = !s->sc.has_time ? UINT64_MAX
            : s->sc.time < e->bin_t0 ? 0 : (s->sc.time - e->bin_t0) / e->bin_width;
    uint64_t h = mix(mix(mix(mix(mix(14695981039346656037ULL, (uint64_t)s->pid), (uint64_t)s->sc.tid),
                             (uint64_t)(uintptr_t)s->comm), ((uint64_t)s->entry << 8) | (uint64_t)k), bin);
    for (size_t i = 0; i < n; i++) h = mix(h, ips[i]);
    if (2 * (e->nagg + 1) > e->acap) {          /* grow the slots, re-place every aggregate */
        size_t c = e->acap ? 2 * e->acap : 1024;
        size_t *sl = calloc(c, sizeof(size_t));
        if (!sl) { PyErr_NoMemory(); return -1; }
        for (size_t j = 0; j < e->nagg; j++) {
            size_t p = e->aggs[j].hash & (c - 1);
            while (sl[p]) p = (p + 1) & (c - 1);
            sl[p] = j + 1;
        }
        free(e->aslot); e->aslot = sl; e->acap = c;
    }
    size_t mask = e->acap - 1, p = h & mask;
    Agg *a = NULL;
    for (; e->aslot[p]; p = (p + 1) & mask) {
        Agg *x = &e->aggs[e->aslot[p] - 1];
        if (x->hash == h && x->n == n && x->comm == s->comm && x->entry == s->entry && x->key == k
                && x->bin == bin
                && x->has_pid == s->has_pid && x->has_tid == s->has_tid
                && (!x->has_pid || x->pid == s->pid) && (!x->has_tid || x->tid == s->sc.tid)
                && !memcmp(x->ips, ips, 8 * n)) { a = x; break; }
    }
    if (a && s->has_period && s->period > UINT64_MAX - a->period) {   /* keep sums exact: flush */
        if (flush_aggs(e) < 0) return -1;
        return count_sample(e, s, k);
    }
    if (!a) {
        if (e->nagg == e->aggcap) {
            size_t c = e->aggcap ? 2 * e->aggcap : 256;
            Agg *n2 = realloc(e->aggs, c * sizeof(Agg));
            if (!n2) { PyErr_NoMemory(); return -1; }
            e->aggs = n2; e->aggcap = c;
        }
        a = &e->aggs[e->nagg];
        memset(a, 0, sizeof(*a));
        a->ips = malloc(n ? 8 * n : 1);
        if (!a->ips) { PyErr_NoMemory(); return -1; }
        memcpy(a->ips, ips, 8 * n);
        a->n = (uint32_t)n; a->hash = h;
        a->pid = s->pid; a->tid = s->sc.tid; a->has_pid = s->has_pid; a->has_tid = s->has_tid;
        a->entry = s->entry; a->key = k; a->has_period = s->has_period; a->bin = bin;
        a->comm = s->comm; Py_XINCREF(a->comm);
        e->aslot[p] = ++e->nagg;
    }
    a->count++;
    a->after += s->sc.after_stack;
    if (s->has_period) a->period += s->period;
    if (s->sc.has_time) {
        if (!a->has_time || s->sc.time < a->tmin) a->tmin = s->sc.time;
        if (!a->has_time || s->sc.time > a->tmax) a->tmax = s->sc.time;
        a->has_time = 1;
    }
    return 0;
}

/* MODE_ORDERED: a sample's own ip (PERF_SAMPLE_IP) when its attr has no callchain, else None:
 * perf script prints it on the sample's line (the prefix of every layout is fixed: abi/sample.py) */
static PyObject *own_ip(Engine *e, Samp *s) {
    const Layout *L = s->entry >= 0 && s->entry < e->nlay ? &e->lay[s->entry] : NULL;
    if (!L || L->has_chain || L->ip_off < 0 || (uint32_t)L->ip_off + 8 > s->rec->size) Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(rd64(s->rec->data + L->ip_off));
}

/* A sample's outcome is final (the rules counted it): the report's lists and cells, then the
 * mode's output (the sample itself goes to the output in turn: the FIFO, drain()) */
static int sc_emit(Engine *e, ScSamp *ss) {
    Samp *s = (Samp *)ss;
    int k = ss->outcome;
    if (ss->unchosen) return 0;         /* stitched, but neither counted nor output */
    if (k != K_STITCHED && k != K_PASSED && e->nfirst < KEEP_FIRST) {
        Noted *u = &e->first_unmatched[e->nfirst++];
        u->time = ss->time; u->has_time = ss->has_time; u->tid = ss->tid; u->has_tid = s->has_tid;
        u->cookie = ss->cookie; u->reason = k;
    }
    Cell *c = cell_of(e, s);
    if (!c) return -1;
    e->count_seq++;
    if (!c->n[k]) c->first[k] = e->count_seq;
    c->n[k]++;
    if (s->comm && PyUnicode_GET_LENGTH(s->comm)) {
        if (c->comm != s->comm) { Py_INCREF(s->comm); Py_XDECREF(c->comm); c->comm = s->comm; }
        c->comm_seq = e->count_seq;
    }
    if (COUNTED(e)) return count_sample(e, s, k);
    if (EVENTS(e)) {
        PyObject *ips = sample_ips(s);
        if (!ips) return -1;
        PyObject *t = e->mode == MODE_EVENTS     /* (folded needs no more, and it is per sample) */
            ? Py_BuildValue("(NNONNi)", opt_i64(s->has_pid, s->pid), opt_i64(s->has_tid, s->sc.tid),
                            s->comm ? s->comm : Py_None, ips, opt_u64(s->has_period, s->period), s->entry)
            : Py_BuildValue("(NNONNiNNKN)", opt_i64(s->has_pid, s->pid), opt_i64(s->has_tid, s->sc.tid),
                            s->comm ? s->comm : Py_None, ips,
                            opt_u64(s->has_period, s->period), s->entry,
                            opt_i64(s->has_cpu, s->cpu), opt_u64(s->sc.has_time, s->sc.time),
                            (unsigned long long)s->seq, own_ip(e, s));
        if (!t || PyList_Append(e->events, t) < 0) { Py_XDECREF(t); return -1; }
        Py_DECREF(t);
    }
    return 0;
}

/* ---- output (stitched_file.py, writer.py) ---------------------------------------------- */
static void samp_free(Engine *e, Samp *s) {
    Py_XDECREF(s->comm);
    stack_put(s->user);
    rec_free(e, s->rec);
    s->pool_next = e->spool;
    e->spool = s;
}

/* Write e->out to the sink (sink()): the bytes leave without a Python object. */
static int sink_flush(Engine *e) {
    const unsigned char *p = e->out;
    size_t n = e->out_len;
    while (n) {
        ssize_t w = write(e->out_fd, p, n > ((size_t)1 << 30) ? (size_t)1 << 30 : n);
        if (w <= 0) {
            if (w < 0 && errno == EINTR) {
                if (PyErr_CheckSignals() < 0) return -1;    /* Ctrl-C: the output is dropped */
                continue;
            }
            PyObject *exc = PyObject_CallFunction(e->sink_error, "i", w < 0 ? errno : EIO);
            if (exc) { PyErr_SetObject((PyObject *)Py_TYPE(exc), exc); Py_DECREF(exc); }
            return -1;
        }
        p += w; n -= (size_t)w; e->sunk += (uint64_t)w;
    }
    e->out_len = 0;
    return 0;
}

static int out_record(Engine *e, Rec *r) {
    int rc = 0;
    if (r->obj) {           /* a foreign record: MODE_FILE hands it to the Python writer in turn */
        if (e->mode == MODE_FILE && e->out_fd >= 0 && PyList_GET_SIZE(e->events) == 0) {
            /* what came before it is written now; what follows waits in e->out (take_output) */
            rc = sink_flush(e) == 0 && PyList_Append(e->events, r->obj) == 0 ? 0 : -1;
        } else if (e->mode == MODE_FILE) {
            PyObject *b = PyBytes_FromStringAndSize((const char *)e->out, (Py_ssize_t)e->out_len);
            rc = b && PyList_Append(e->events, b) == 0 && PyList_Append(e->events, r->obj) == 0 ? 0 : -1;
            Py_XDECREF(b);
            if (rc == 0) e->out_len = 0;
        }
    } else if (e->mode == MODE_FILE) {
        if (e->keep[r->type]) rc = out_put(e, r->data, r->size);
        else e->dropped[r->type]++;
    } else if (e->mode == MODE_OUTCOMES && (r->type == T_LOST || r->type == T_LOST_SAMPLES)) {
        PyObject *o = make_record(e, r);
        rc = o && PyList_Append(e->events, o) == 0 ? 0 : -1;
        Py_XDECREF(o);
    }
    rec_free(e, r);
    return rc;
}

static int out_sample(Engine *e, Samp *s) {
    int rc = 0;
    if (s->sc.unchosen) { samp_free(e, s); return 0; }
    if (e->mode == MODE_ORDERED) {          /* the sample's turn in time order: its number */
        PyObject *n = PyLong_FromUnsignedLongLong(s->seq);
        rc = (!n || PyList_Append(e->events, n) < 0) ? -1 : 0;
        Py_XDECREF(n);
    }
    if (e->mode == MODE_OUTCOMES) {         /* the sample, in time order, as the timeline needs it */
        PyObject *t = Py_BuildValue("(NNNOi)", opt_u64(s->sc.has_time, s->sc.time), opt_i64(s->has_cpu, s->cpu),
                                    opt_i64(s->has_tid, s->sc.tid), s->comm ? s->comm : Py_None, s->sc.outcome);
        rc = (!t || PyList_Append(e->events, t) < 0) ? -1 : 0;
        Py_XDECREF(t);
    }
    if (e->mode == MODE_FILE) {
        Rec *r = s->rec;
        if (s->sc.outcome == K_PASSED) {
            rc = out_put(e, r->data, r->size);
        } else {
            /* the user frames that fit the u16 record size, innermost first (user_room) */
            size_t base = s->chain_off + 8 + 8 * (size_t)s->knr + (r->size - s->chain_end);
            uint64_t keep = s->sc.outcome == K_STITCHED ? (uint64_t)s->user->n : 0;
            uint64_t room = base < 0xFFFF ? (0xFFFF - base) / 8 : 0;
            if (keep && keep + 1 > room) {
                uint64_t fit = room > 1 ? room - 1 : 0;
                e->truncated++;
                e->truncated_frames += keep - fit;
                keep = fit;
            }
            uint64_t un = keep ? 1 + keep : 0;
            uint64_t nr = s->knr + un;
            size_t size = base + 8 * un;
            if (reserve(&e->out, &e->out_cap, e->out_len + size) < 0) { samp_free(e, s); return -1; }
            unsigned char *p = e->out + e->out_len;
            memcpy(p, r->data, s->chain_off);
            memcpy(p + s->chain_off, &nr, 8);
            memcpy(p + s->chain_off + 8, r->data + s->chain_off + 8, 8 * (size_t)s->knr);
            unsigned char *q = p + s->chain_off + 8 + 8 * (size_t)s->knr;
            if (un) {
                uint64_t user = CTX_USER;
                memcpy(q, &user, 8);
                memcpy(q + 8, s->user->frames, 8 * (size_t)keep);
                q += 8 * un;
            }
            memcpy(q, r->data + s->chain_end, r->size - s->chain_end);
            uint16_t sz = (uint16_t)size;
            memcpy(p + 6, &sz, 2);
            e->out_len += size;
            e->rewritten++;
        }
    }
    samp_free(e, s);
    return rc;
}

/* ---- the hold-back FIFO (feed.py _push/_drain) ----------------------------------------- */
static int fifo_append(Engine *e, Rec *r, Samp *s) {
    if (e->flen == e->fcap) {
        size_t cap = e->fcap ? 2 * e->fcap : 1024;
        FItem *n = malloc(cap * sizeof(FItem));
        if (!n) { PyErr_NoMemory(); return -1; }
        for (size_t i = 0; i < e->flen; i++) n[i] = e->fifo[(e->fhead + i) % e->fcap];
        free(e->fifo);
        e->fifo = n; e->fcap = cap; e->fhead = 0;
    }
    FItem *it = &e->fifo[(e->fhead + e->flen) % e->fcap];
    it->rec = r; it->s = s;
    e->flen++;
    return 0;
}

static int drain(Engine *e) {
    while (e->flen) {
        FItem *it = &e->fifo[e->fhead];
        if (it->s) {
            if (it->s->sc.outcome == SC_PENDING) return 0;
            Samp *s = it->s;
            e->fhead = (e->fhead + 1) % e->fcap; e->flen--;
            if (out_sample(e, s) < 0) return -1;
        } else {
            Rec *r = it->rec;
            e->fhead = (e->fhead + 1) % e->fcap; e->flen--;
            if (out_record(e, r) < 0) return -1;
        }
    }
    return 0;
}

static int push(Engine *e, Rec *r) {
    if (!e->flen) return out_record(e, r);
    if (fifo_append(e, r, NULL) < 0) { rec_free(e, r); return -1; }
    if (e->flen > e->window) {
        if (sc_evict_oldest(&e->sc) < 0) return -1;
        return drain(e);
    }
    return 0;
}

/* ---- the feed (feed.py PerfFeed.run) --------------------------------------------------- */
static PyObject *make_record(Engine *e, Rec *r) {
    return PyObject_CallFunction(e->record_cls, "iiy#K", (int)r->type, (int)r->misc,
                                 (const char *)r->data, (Py_ssize_t)r->size,
                                 (unsigned long long)r->offset);
}

static int body_end(Engine *e, Rec *r) {
    int ent = entry_of_trailer(e, r);
    return (int)r->size - (ent >= 0 ? e->lay[ent].trailer_size : 0);
}

/* The Python decoders (engine.py decode, the feed's parsers) for a record the engine does not
 * decode itself: a sample of a layout it does not walk, or damage, for which they raise the
 * Python path's FormatError (same text, same offset). */
static PyObject *py_decode(Engine *e, Rec *r) {
    PyObject *o = make_record(e, r);
    if (!o) return NULL;
    PyObject *res = PyObject_CallOneArg(e->decode_cb, o);
    Py_DECREF(o);
    if (!res && PyErr_ExceptionMatches(e->format_error)) e->decode_damage = 1;
    return res;
}

/* A record the engine found damaged: the Python decoders say so, in the Python path's words. */
static void damaged(Engine *e, Rec *r) {
    PyObject *res = py_decode(e, r);
    if (res) {
        Py_DECREF(res);
        PyErr_Format(PyExc_RuntimeError, "the C engine found damage in the record at offset %llu "
                     "that the Python decoders took", (unsigned long long)r->offset);
    }
    rec_free(e, r);
}

static int get_opt(PyObject *t, Py_ssize_t i, int *has, uint64_t *v) {
    PyObject *o = PyTuple_GET_ITEM(t, i);
    *has = o != Py_None;
    *v = *has ? PyLong_AsUnsignedLongLongMask(o) : 0;      /* 0 when absent, as calloc leaves it */
    return PyErr_Occurred() ? -1 : 0;
}

/* A sample's fields from the Python decoders: (pid, tid, cpu, time, period, callchain_offset,
 * callchain_end, attr index), None where absent. */
static int python_sample(Engine *e, Samp *s) {
    PyObject *t = py_decode(e, s->rec);
    if (!t) return -1;
    uint64_t v[8]; int has[8];
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 8) {
        Py_DECREF(t);
        PyErr_SetString(PyExc_TypeError, "decode: a sample gives an 8-tuple");
        return -1;
    }
    for (int i = 0; i < 8; i++)
        if (get_opt(t, i, &has[i], &v[i]) < 0) { Py_DECREF(t); return -1; }
    Py_DECREF(t);
    s->has_pid = has[0]; s->pid = (int64_t)v[0]; s->has_tid = has[1]; s->sc.tid = (int64_t)v[1];
    s->has_cpu = has[2]; s->cpu = (int64_t)v[2]; s->sc.has_time = has[3]; s->sc.time = v[3];
    s->has_period = has[4]; s->period = v[4];
    s->chain_off = s->chain_end = has[5] ? (uint32_t)v[5] : 0;
    if (has[5]) s->chain_end = (uint32_t)v[6];
    s->entry = (int)v[7];
    return has[5];
}

/* ---- the selection (selection.py Selection.admits, time_skips) --------------------------- */
static int in_list(const int64_t *a, size_t n, int64_t v) {
    for (size_t i = 0; i < n; i++) if (a[i] == v) return 1;
    return 0;
}

static int time_skips(const Select *q, int has_time, uint64_t t) {
    if (!q->nranges || !has_time || !t) return 0;
    if (q->nranges == 1) {
        uint64_t start = q->ranges[0], end = q->ranges[1];
        return (start && t < start) || (end && t > end);
    }
    for (size_t i = 0; i < q->nranges; i++) {
        uint64_t start = q->ranges[2 * i], end = q->ranges[2 * i + 1];
        if (t >= start && (t <= end || !end)) return 0;
    }
    return 1;
}

/* 1 when s is chosen, 0 when not, -1 on error (the comm set's lookup) */
static int chosen(Engine *e, Samp *s) {
    const Select *q = &e->sel;
    if (q->has_pids && !in_list(q->pids, q->npids, s->has_pid ? s->pid : -1)) return 0;
    if (q->has_tids && !in_list(q->tids, q->ntids, s->has_tid ? s->sc.tid : -1)) return 0;
    if (q->comms) {
        int in, gone = s->has_tid && map_get(&e->exited, (uint64_t)s->sc.tid) != NULL;
        if (s->comm && PyUnicode_GET_LENGTH(s->comm) && !gone) in = PySet_Contains(q->comms, s->comm);
        else {              /* selection.comm_of: "swapper" for tid 0, else ":TID" */
            PyObject *name = s->has_tid && s->sc.tid == 0 ? PyUnicode_FromString("swapper")
                : PyUnicode_FromFormat(":%lld", (long long)(s->has_tid ? s->sc.tid : -1));
            in = name ? PySet_Contains(q->comms, name) : -1;
            Py_XDECREF(name);
        }
        if (in <= 0) return in;
    }
    if (q->has_cpus && !(s->has_cpu && in_list(q->cpus, q->ncpus, s->cpu))) return 0;
    return !time_skips(q, s->sc.has_time, s->sc.time);
}

static int do_sample(Engine *e, Rec *r) {
    int ent = entry_of_sample(e, r);
    Layout *L = ent >= 0 ? &e->lay[ent] : NULL;
    uint32_t size = r->size;
    Samp *s = samp_alloc(e);
    if (!s) { rec_free(e, r); PyErr_NoMemory(); return -1; }
    const unsigned char *d = r->data;
    s->rec = r; s->sc.outcome = SC_PENDING;
    int chain = 0;
    if (L && L->simple && (uint32_t)L->prefix_end <= size
            && (!L->has_chain || ((uint32_t)L->prefix_end + 8 <= size
                                  && rd64(d + L->prefix_end) <= (size - L->prefix_end - 8) / 8))) {
        s->entry = ent;
        if (L->tid_off >= 0) {
            s->pid = (int32_t)rd32(d + L->tid_off); s->sc.tid = (int32_t)rd32(d + L->tid_off + 4);
            s->has_pid = s->has_tid = 1;
        }
        if (L->time_off >= 0) { s->sc.time = rd64(d + L->time_off); s->sc.has_time = 1; }
        if (L->cpu_off >= 0) { s->cpu = rd32(d + L->cpu_off); s->has_cpu = 1; }
        if (L->period_off >= 0) { s->period = rd64(d + L->period_off); s->has_period = 1; }
        uint32_t off = (uint32_t)L->prefix_end;
        s->chain_off = off;
        s->chain_end = L->has_chain ? off + 8 + 8 * (uint32_t)rd64(d + off) : off;
        chain = L->has_chain;
    } else if ((chain = python_sample(e, s)) < 0) {    /* another layout, or damage */
        s->rec = NULL; samp_free(e, s); rec_free(e, r);
        return -1;
    }
    s->seq = e->sample_seq++;
    if (chain) {
        uint32_t off = s->chain_off;
        uint64_t nr = (s->chain_end - off - 8) / 8;
        s->knr = (uint32_t)nr;
        if (nr >= 2 && rd64(d + off + 8 + 8 * (nr - 2)) == CTX_DEFERRED) {
            s->sc.cookie = rd64(d + off + 8 + 8 * (nr - 1));
            s->sc.has_cookie = 1;
            e->cookie_seen = 1;
            s->knr = (uint32_t)nr - 2;
        } else if (nr >= 1 && rd64(d + off + 8 * nr) == CTX_DEFERRED) {
            /* the marker without a cookie: matched by task order, which only Python does;
             * engine.unavailable() sends such files there, this is a stream it cannot probe */
            uint64_t at = r->offset;
            s->rec = NULL; samp_free(e, s); rec_free(e, r);
            if (e->cookie_seen) {   /* the other layout after the file's: damage, as feed.py
                                     * says (its decoders' kind: the queue is not delivered) */
                PyObject *err = PyObject_CallFunction(e->format_error, "OKs", Py_None, at,
                    "SAMPLE: deferred sample in the no-cookie layout, but this file's are in "
                    "the cookie layout");
                if (err) { PyErr_SetObject(e->format_error, err); Py_DECREF(err); }
                e->decode_damage = 1;
                return -1;
            }
            FAIL(e, "deferred callchain without a cookie (the pre-cookie layout), which the "
                    "engine does not match: run with DEFERSTITCH_ACCEL=0", at);
        }
    }
    if (s->has_tid) {
        PyObject *c = map_get(&e->comm_of, (uint64_t)s->sc.tid);
        Py_XINCREF(c);
        s->comm = c;
    }
    if (e->sel.on) {
        int in = chosen(e, s);
        if (in < 0) { samp_free(e, s); return -1; }
        s->sc.unchosen = !in;
    }
    if (fifo_append(e, NULL, s) < 0) { samp_free(e, s); return -1; }
    if (s->sc.has_cookie && (!s->has_tid || !s->sc.has_time)) {     /* perf cannot match these either */
        if (sc_reject(&e->sc, &s->sc, K_NO_TASK) < 0) return -1;
    } else if (sc_sample(&e->sc, &s->sc) < 0) return -1;
    return drain(e);
}

static int do_deferred(Engine *e, Rec *r) {
    int ent = entry_of_trailer(e, r);
    int has_tid = 0, has_time = 0;
    int64_t tid = 0; uint64_t time = 0;
    uint32_t size = r->size;
    if (ent >= 0 && e->lay[ent].has_trailer && size - 8 >= (uint32_t)e->lay[ent].trailer_size) {
        Layout *L = &e->lay[ent];
        if (L->tr_tid >= 0) { tid = (int32_t)rd32(r->data + size - L->tr_tid + 4); has_tid = 1; }
        if (L->tr_time >= 0) { time = rd64(r->data + size - L->tr_time); has_time = 1; }
    }
    int64_t bend = body_end(e, r);
    if (size < 24) DAMAGED(e, r);
    uint64_t cookie = rd64(r->data + 8), nr = rd64(r->data + 16);
    if (bend - 24 < 0 || nr > (uint64_t)(bend - 24) / 8) DAMAGED(e, r);
    const unsigned char *ips = r->data + 24;
    uint64_t frames = 0;
    for (uint64_t i = 0; i < nr; i++) if (rd64(ips + 8 * i) < CTX_MAX) frames++;
    uint64_t dropped = nr - frames - (nr && rd64(ips) == CTX_USER ? 1 : 0);
    int rc = 0;
    if (!has_tid) e->deferred_without_tid++;
    else {                      /* the stack: the user frames, without the context markers */
        Stack *st = malloc(sizeof(Stack) + 8 * frames);
        if (!st) { rec_free(e, r); PyErr_NoMemory(); return -1; }
        st->sc.cookie = cookie; st->sc.time = time; st->sc.has_time = has_time; st->sc.served = 0;
        st->refs = 1; st->n = (uint32_t)frames;
        for (uint64_t i = 0, j = 0; i < nr; i++) {
            uint64_t ip = rd64(ips + 8 * i);
            if (ip < CTX_MAX) st->frames[j++] = ip;
        }
        rc = sc_deferred(&e->sc, tid, &st->sc, dropped);
    }
    rec_free(e, r);
    if (rc < 0) return -1;
    return has_tid ? drain(e) : 0;
}

/* comms[tid] = comm, in the dict (the state) and in comm_of (the samples' lookups) */
static int comm_set(Engine *e, int64_t tid, PyObject *comm) {
    PyObject *k = PyLong_FromLongLong(tid);
    if (!k || PyDict_SetItem(e->comms, k, comm) < 0) { Py_XDECREF(k); return -1; }
    Py_DECREF(k);
    PyObject *old = map_get(&e->comm_of, (uint64_t)tid);
    if (map_put(&e->comm_of, (uint64_t)tid, comm) < 0) { PyErr_NoMemory(); return -1; }
    if (e->exited.n) map_del(&e->exited, (uint64_t)tid);
    Py_INCREF(comm);
    Py_XDECREF(old);
    return 0;
}

static int do_comm(Engine *e, Rec *r) {
    if (r->size < 16) { damaged(e, r); return -2; }     /* r is freed */
    int64_t tid = (int32_t)rd32(r->data + 12);
    int end = body_end(e, r);
    Py_ssize_t n = 0;
    if (end > 16) {
        const unsigned char *z = memchr(r->data + 16, 0, end - 16);
        n = z ? z - (r->data + 16) : end - 16;
    }
    PyObject *comm = PyUnicode_DecodeUTF8((const char *)r->data + 16, n, "replace");
    int rc = comm ? comm_set(e, tid, comm) : -1;
    Py_XDECREF(comm);
    return rc;
}

static int feed_record(Engine *e, Rec *r) {
    uint16_t t = r->type;
    int rc;
    e->counts[t]++;
    e->nrecords++;
    if (EVENTS(e) && (t == T_MMAP || t == T_MMAP2 || t == T_COMM || t == T_FORK
                                   || t == T_EXIT || t == T_KSYMBOL)) {
        if (e->nagg && flush_aggs(e) < 0) { rec_free(e, r); return -1; }    /* names change from here */
        PyObject *o = make_record(e, r);          /* what PerfContext.observe sees */
        if (!o || PyList_Append(e->events, o) < 0) { Py_XDECREF(o); rec_free(e, r); return -1; }
        Py_DECREF(o);
    }
    switch (t) {
    case T_SAMPLE:
        return do_sample(e, r);
    case T_DEFERRED:
        return do_deferred(e, r);
    case T_COMM:
        if ((rc = do_comm(e, r)) < 0) { if (rc == -1) rec_free(e, r); return -1; }
        break;
    case T_EXIT: {
        if (r->size < 32) DAMAGED(e, r);
        int64_t tid = (int32_t)rd32(r->data + 16);
        uint64_t time = rd64(r->data + 24);
        if (e->sel.comms && map_put(&e->exited, (uint64_t)tid, (void *)1) < 0) {
            rec_free(e, r); PyErr_NoMemory(); return -1;
        }
        if (push(e, r) < 0) return -1;
        if (sc_exit(&e->sc, tid, time) < 0) return -1;
        return drain(e);
    }
    case T_FORK: {
        if (r->size < 32) DAMAGED(e, r);
        int64_t tid = (int32_t)rd32(r->data + 16), ptid = (int32_t)rd32(r->data + 20);
        if (sc_reuse(&e->sc, tid) < 0) { rec_free(e, r); return -1; }
        if (e->exited.n) map_del(&e->exited, (uint64_t)tid);
        PyObject *c = map_get(&e->comm_of, (uint64_t)ptid);
        if (c && comm_set(e, tid, c) < 0) { rec_free(e, r); return -1; }
        break;
    }
    case T_LOST:
        if (r->size < 24) DAMAGED(e, r);
        sc_lost(&e->sc, rd64(r->data + 16));
        break;
    case T_LOST_SAMPLES:
        if (r->size < 16) DAMAGED(e, r);
        sc_lost(&e->sc, rd64(r->data + 8));
        break;
    }
    return push(e, r);
}

/* ---- the sorter (sorter.py ordered) ---------------------------------------------------- */
static inline int hless(HItem *a, HItem *b) { return a->time < b->time || (a->time == b->time && a->seq < b->seq); }

static Rec *heap_pop(Engine *e) {
    HItem top = e->heap[0], last = e->heap[--e->hn];
    size_t i = 0, n = e->hn;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && hless(&e->heap[c + 1], &e->heap[c])) c++;
        if (!hless(&e->heap[c], &last)) break;
        e->heap[i] = e->heap[c]; i = c;
    }
    if (n) e->heap[i] = last;
    return top.rec;
}

/* The sorter's queue is a heap and a run: records that come in time order (most of them: a
 * round is mostly one CPU's buffer after another, and files we wrote are sorted) are appended
 * to the run, a FIFO, for O(1) each; the others go to the heap. The next record is the smaller
 * of the two heads, by (time, sequence): the same order as one heap (sorter.py). */
static inline size_t q_len(Engine *e) { return e->hn + e->rlen; }

static inline HItem *q_min(Engine *e) {
    if (!e->rlen) return &e->heap[0];
    HItem *r = &e->run[e->rhead];
    return e->hn && hless(&e->heap[0], r) ? &e->heap[0] : r;
}

static Rec *q_pop(Engine *e) {
    if (e->rlen && (!e->hn || hless(&e->run[e->rhead], &e->heap[0]))) {
        Rec *r = e->run[e->rhead].rec;
        e->rhead = (e->rhead + 1) & (e->rcap - 1);
        e->rlen--;
        return r;
    }
    return heap_pop(e);
}

static int heap_push(Engine *e, uint64_t time, Rec *r);

static int q_push(Engine *e, uint64_t time, Rec *r) {
    if (e->rlen && e->run[(e->rhead + e->rlen - 1) & (e->rcap - 1)].time > time)
        return heap_push(e, time, r);
    if (e->rlen == e->rcap) {       /* grow, the ring unrolled from its head */
        size_t cap = e->rcap ? 2 * e->rcap : 4096;
        HItem *n = malloc(cap * sizeof(HItem));
        if (!n) { PyErr_NoMemory(); return -1; }
        for (size_t i = 0; i < e->rlen; i++) n[i] = e->run[(e->rhead + i) & (e->rcap - 1)];
        free(e->run);
        e->run = n; e->rcap = cap; e->rhead = 0;
    }
    HItem it = { time, e->seq++, r };
    e->run[(e->rhead + e->rlen) & (e->rcap - 1)] = it;
    e->rlen++;
    return 0;
}

static int heap_push(Engine *e, uint64_t time, Rec *r) {
    if (e->hn == e->hcap) {
        size_t cap = e->hcap ? 2 * e->hcap : 4096;
        HItem *n = realloc(e->heap, cap * sizeof(HItem));
        if (!n) { PyErr_NoMemory(); return -1; }
        e->heap = n; e->hcap = cap;
    }
    HItem it = { time, e->seq++, r };
    size_t i = e->hn++;
    while (i) {
        size_t p = (i - 1) / 2;
        if (!hless(&it, &e->heap[p])) break;
        e->heap[i] = e->heap[p]; i = p;
    }
    e->heap[i] = it;
    return 0;
}

/* evlist.time_of */
static int time_of(Engine *e, Rec *r, uint64_t *t) {
    if (r->type >= T_USER_START || e->nlay == 0) return 0;
    if (r->type == T_SAMPLE) {
        int ent = entry_of_sample(e, r);
        if (ent < 0) return 0;
        int off = e->lay[ent].time_off;
        if (off < 0 || r->size < (uint32_t)off + 8) return 0;
        *t = rd64(r->data + off);
        return 1;
    }
    int ent = entry_of_trailer(e, r);
    Layout *L = &e->lay[ent];
    if (L->tr_time < 0 || !L->has_trailer || r->size - 8 < (uint32_t)L->trailer_size) return 0;
    *t = rd64(r->data + r->size - L->tr_time);
    return 1;
}

static int sort_record(Engine *e, Rec *r) {
    if (r->type == T_FINISHED_ROUND) {
        e->rounds++;
        if (e->have_next_flush)
            while (q_len(e) && q_min(e)->time <= e->next_flush) {
                e->last_flushed = q_min(e)->time;
                if (feed_record(e, q_pop(e)) < 0) { rec_free(e, r); return -1; }
            }
        e->next_flush = e->max_time; e->have_next_flush = 1;
        return feed_record(e, r);
    }
    uint64_t t;
    if (!time_of(e, r, &t)) return feed_record(e, r);
    if (t < e->last_flushed) e->unordered++;
    if (t > e->max_time) e->max_time = t;
    if (q_push(e, t, r) < 0) { rec_free(e, r); return -1; }
    if (q_len(e) > e->max_queued_seen) e->max_queued_seen = q_len(e);
    if (q_len(e) > e->max_queued) {
        e->forced_flushes++;
        for (size_t k = q_len(e) / 2; k; k--) {
            e->last_flushed = q_min(e)->time;
            if (feed_record(e, q_pop(e)) < 0) return -1;
        }
    }
    return 0;
}

/* ---- framing (reader.py records) ------------------------------------------------------- */
static int note(Engine *e, Rec *r) {
    PyObject *o = make_record(e, r);
    if (!o) return -1;
    PyObject *plan = PyObject_CallOneArg(e->note_cb, o);
    Py_DECREF(o);
    if (!plan) return -1;
    int rc = plan == Py_None ? 0 : load_plan(e, plan);
    Py_DECREF(plan);
    return rc;
}

static int is_note(uint16_t t) {
    /* AUXTRACE_INFO: the reader counts the file's AUX area trace (perfdata/auxtrace.py) */
    return t == T_HEADER_ATTR || t == T_ID_INDEX || t == T_HEADER_FEATURE || t == T_EVENT_UPDATE
        || t == T_AUXTRACE_INFO;
}

static int frame_inner(Engine *e);

/* A record of a kind the engine does not frame itself (a payload after its size: AUXTRACE,
 * HEADER_TRACING_DATA; a type past 16 bits), framed by the Python reader: it has no time, so
 * it goes straight to the feed, and out as the Python object (MODE_FILE: the writer's write). */
static int foreign(Engine *e, PyObject *obj, uint32_t type, uint64_t at) {
    if (type <= 0xFFFF) e->counts[type]++;
    else {
        PyObject *k = PyLong_FromUnsignedLong(type);
        PyObject *n = k ? PyDict_GetItemWithError(e->big_counts, k) : NULL;
        PyObject *m = k && (n || !PyErr_Occurred()) ? PyLong_FromLongLong(n ? PyLong_AsLongLong(n) + 1 : 1) : NULL;
        int rc = m ? PyDict_SetItem(e->big_counts, k, m) : -1;
        Py_XDECREF(k); Py_XDECREF(m);
        if (rc < 0) return -1;
    }
    Rec *r = rec_alloc(e, 0);
    if (!r) return -1;
    r->offset = at; r->type = 0xFFFF; r->misc = 0;
    Py_INCREF(obj); r->obj = obj;
    return push(e, r);
}

static int ordinary(const unsigned char *p) {
    uint16_t t = rd16(p);
    return rd32(p) <= 0xFFFF && t != T_AUXTRACE && t != T_TRACING_DATA;
}

static int frame_inner(Engine *e);

/* One whole record of the stream at file offset ``at`` (``inner``: from a container). */
static int take(Engine *e, const unsigned char *p, uint32_t size, uint64_t at, int inner) {
    uint16_t t = rd16(p);
    Rec *r = rec_alloc(e, size);
    if (!r) return -1;
    r->offset = at; r->type = t; r->misc = rd16(p + 4);
    memcpy(r->data, p, size);
    if (is_note(t) && note(e, r) < 0) { rec_free(e, r); return -1; }
    if (inner || (t != T_COMPRESSED && t != T_COMPRESSED2)) return sort_record(e, r);
    /* the container is yielded first, then its contents (reader.py) */
    PyObject *o = make_record(e, r);
    if (!o) { rec_free(e, r); return -1; }
    if (sort_record(e, r) < 0) { Py_DECREF(o); return -1; }
    PyObject *raw = PyObject_CallOneArg(e->decompress_cb, o);
    Py_DECREF(o);
    if (!raw) return -1;
    char *b; Py_ssize_t n;
    if (PyBytes_AsStringAndSize(raw, &b, &n) < 0) { Py_DECREF(raw); return -1; }
    if (n) {        /* a container may decompress to nothing: zin may still be NULL then */
        if (reserve(&e->zin, &e->zin_cap, e->zin_len + n) < 0) { Py_DECREF(raw); return -1; }
        memcpy(e->zin + e->zin_len, b, n);
        e->zin_len += n;
    }
    Py_DECREF(raw);
    e->zoffset = at;
    return frame_inner(e);
}

/* Records decompressed from containers (reader.py Decompressor.feed); one may straddle two. */
static int frame_inner(Engine *e) {
    size_t pos = 0;
    int rc = 0;
    if (!e->zin_len) return 0;          /* nothing to frame (and zin may be NULL) */
    while (e->zin_len - pos >= 8) {
        const unsigned char *p = e->zin + pos;
        uint16_t size = rd16(p + 6);
        if (size < 8) {             /* the Python reader's words for it */
            PyObject *err = PyObject_CallMethod(e->decompress_cb, "small", "KIH",
                                                (unsigned long long)e->zoffset, rd32(p), size);
            if (err) { PyErr_SetObject((PyObject *)Py_TYPE(err), err); Py_DECREF(err); }
            rc = -1;
            break;
        }
        if (e->zin_len - pos < size) break;
        if (!ordinary(p)) {         /* a type past 16 bits: the Python record, passed as is */
            PyObject *o = PyObject_CallFunction(e->record_cls, "IHy#KyO", rd32(p), rd16(p + 4),
                                                (const char *)p, (Py_ssize_t)size,
                                                (unsigned long long)e->zoffset, "", Py_True);
            rc = o ? foreign(e, o, rd32(p), e->zoffset) : -1;
            Py_XDECREF(o);
        } else rc = take(e, p, size, e->zoffset, 1);
        if (rc < 0) break;
        pos += size;
    }
    memmove(e->zin, e->zin + pos, e->zin_len - pos);
    e->zin_len -= pos;
    return rc;
}

/* ---- the Python type ------------------------------------------------------------------- */
static PyObject *take_output(Engine *e) {
    if (e->mode == MODE_FILE && e->out_fd >= 0 && PyList_GET_SIZE(e->events) == 0) {
        if (sink_flush(e) < 0) return NULL;
        Py_RETURN_NONE;                 /* all written */
    }
    if (e->mode == MODE_FILE) {
        PyObject *b = PyBytes_FromStringAndSize((const char *)e->out, (Py_ssize_t)e->out_len);
        if (!b) return NULL;
        e->out_len = 0;
        if (PyList_GET_SIZE(e->events) == 0) return b;
        /* foreign records went out between the bytes: [bytes, Record, ..., bytes] */
        if (PyList_Append(e->events, b) < 0) { Py_DECREF(b); return NULL; }
        Py_DECREF(b);
    }
    if (e->mode == MODE_NONE) Py_RETURN_NONE;
    if (e->nagg && flush_aggs(e) < 0) return NULL;
    PyObject *ev = e->events;
    e->events = PyList_New(0);
    if (!e->events) { e->events = ev; return NULL; }
    return ev;
}

static int cleared(Engine *e) {
    if (e->comms && e->events) return 0;
    PyErr_SetString(PyExc_RuntimeError, "engine used after it was cleared");
    return 1;
}

static int usable(Engine *e) {
    if (cleared(e)) return 0;
    if (e->failed || e->finished) {
        PyErr_SetString(PyExc_RuntimeError, e->failed ? "engine already failed" : "engine already finished");
        return 0;
    }
    return 1;
}

/* The end of the input, clean or not (PerfFeed.run and sorter.ordered): what the sorter holds
 * goes to the feed, then the stitcher gives up what waits and the FIFO drains. */
static int flush_sorter(Engine *e) {
    e->flushed = 1;
    while (q_len(e))
        if (feed_record(e, q_pop(e)) < 0) return -1;
    return 0;
}

static int end_stitch(Engine *e) {
    while (q_len(e)) rec_free(e, q_pop(e));       /* left in the sorter by a damaged record */
    e->finished = 1;
    return sc_finish(&e->sc) < 0 || drain(e) < 0 ? -1 : 0;
}

/* A step failed. On damage (FormatError) deliver what came before it as the Python path does:
 * the reader's damage lets the sorter deliver its queue first (sorter.ordered), damage found
 * by the decoders does not (the feed leaves its loop), and a damaged record among the queue
 * raises its own error instead. Then that error; anything else leaves the engine failed. */
static PyObject *failed(Engine *e) {
    if (e->finished || !PyErr_ExceptionMatches(e->format_error)) { e->failed = 1; return NULL; }
    PyObject *type, *val, *tb;
    PyErr_Fetch(&type, &val, &tb);
    if (!e->decode_damage && !e->flushed && flush_sorter(e) < 0) {
        int damage = PyErr_ExceptionMatches(e->format_error);
        Py_XDECREF(type); Py_XDECREF(val); Py_XDECREF(tb);
        if (!damage) { e->failed = 1; return NULL; }
        PyErr_Fetch(&type, &val, &tb);
    }
    if (end_stitch(e) < 0) {
        Py_XDECREF(type); Py_XDECREF(val); Py_XDECREF(tb);
        e->failed = 1;
        return NULL;
    }
    PyErr_Restore(type, val, tb);
    return NULL;
}

/* feed(buffer, start, length, offset): frame the whole ordinary records of buffer[start:start +
 * length] (file offset ``offset``), order, stitch; how many bytes were taken. It stops before a
 * record that is not whole, smaller than its header, or not ordinary: the caller's reader frames
 * that one (engine.py). */
static PyObject *Engine_feed(Engine *e, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, len;
    unsigned long long base;
    if (!PyArg_ParseTuple(args, "y*nnK", &view, &start, &len, &base)) return NULL;
    if (!usable(e)) { PyBuffer_Release(&view); return NULL; }
    if (start < 0 || len < 0 || start + len > view.len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "feed: range outside the buffer");
        return NULL;
    }
    const unsigned char *in = (const unsigned char *)view.buf + start;
    size_t pos = 0, n = (size_t)len;
    int rc = 0;
    while (n - pos >= 8) {
        uint16_t size = rd16(in + pos + 6);
        if (size < 8 || n - pos < size || !ordinary(in + pos)) break;
        if ((rc = take(e, in + pos, size, base + pos, 0)) < 0) break;
        pos += size;
    }
    PyBuffer_Release(&view);
    if (rc < 0) return failed(e);
    return PyLong_FromSize_t(pos);
}

/* foreign(record): a record the reader framed that the engine does not (see foreign()). */
static PyObject *Engine_foreign(Engine *e, PyObject *rec) {
    if (!usable(e)) return NULL;
    PyObject *t = PyObject_GetAttrString(rec, "type"), *o = PyObject_GetAttrString(rec, "offset");
    uint32_t type = t ? (uint32_t)PyLong_AsUnsignedLongMask(t) : 0;
    uint64_t at = o ? PyLong_AsUnsignedLongLongMask(o) : 0;
    Py_XDECREF(t); Py_XDECREF(o);
    if (PyErr_Occurred()) return NULL;
    if (foreign(e, rec, type, at) < 0) return failed(e);
    Py_RETURN_NONE;
}

static PyObject *Engine_finish(Engine *e, PyObject *noarg) {
    if (!usable(e)) return NULL;
    if (flush_sorter(e) < 0 || end_stitch(e) < 0) return failed(e);
    Py_RETURN_NONE;
}

static PyObject *Engine_output(Engine *e, PyObject *noarg) {
    if (cleared(e)) return NULL;
    return take_output(e);
}

/* sink(fd, error): MODE_FILE writes its records to fd itself (at fd's offset, after whatever
 * the caller wrote and flushed), and output() gives None, or, when foreign records came, the
 * list [Record, bytes, Record, ..., bytes] for the caller to write after what the engine wrote.
 * error(errno) makes the exception of a failed write (the output's one line). */
static PyObject *Engine_sink(Engine *e, PyObject *args) {
    int fd;
    PyObject *err;
    if (!PyArg_ParseTuple(args, "iO", &fd, &err)) return NULL;
    if (cleared(e)) return NULL;
    if (e->mode != MODE_FILE || fd < 0) {
        PyErr_SetString(PyExc_ValueError, "sink: MODE_FILE and a file descriptor");
        return NULL;
    }
    Py_INCREF(err);
    Py_XSETREF(e->sink_error, err);
    e->out_fd = fd;
    Py_RETURN_NONE;
}

/* sunk(): bytes written to the sink so far */
static PyObject *Engine_sunk(Engine *e, PyObject *noarg) {
    return PyLong_FromUnsignedLongLong(e->sunk);
}

/* progress(): (records fed, samples) so far, for the progress line */
static PyObject *Engine_progress(Engine *e, PyObject *noarg) {
    return Py_BuildValue("(KK)", (unsigned long long)e->nrecords, (unsigned long long)e->sc.samples);
}

/* leftover(): (bytes of a record cut at the end of the compressed stream, container offset) */
/* recording.py Sequence.records: the next file starts; its boundary, the latest time read */
static PyObject *Engine_boundary(Engine *e, PyObject *noarg) {
    if (sc_boundary(&e->sc, e->max_time) < 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *Engine_leftover(Engine *e, PyObject *noarg) {
    return Py_BuildValue("(nK)", (Py_ssize_t)e->zin_len, (unsigned long long)e->zoffset);
}

static PyObject *u64_dict(uint64_t *arr) {
    PyObject *d = PyDict_New();
    for (int t = 0; d && t < 65536; t++) {
        if (!arr[t]) continue;
        PyObject *k = PyLong_FromLong(t), *v = PyLong_FromUnsignedLongLong(arr[t]);
        if (!k || !v || PyDict_SetItem(d, k, v) < 0) { Py_XDECREF(k); Py_XDECREF(v); Py_DECREF(d); return NULL; }
        Py_DECREF(k); Py_DECREF(v);
    }
    return d;
}

static PyObject *noted_list(Noted *n, int count, int with_reason) {
    PyObject *l = PyList_New(0);
    for (int i = 0; l && i < count; i++) {
        PyObject *t = with_reason
            ? Py_BuildValue("(NNKi)", opt_u64(n[i].has_time, n[i].time), opt_i64(n[i].has_tid, n[i].tid),
                            (unsigned long long)n[i].cookie, n[i].reason)
            : Py_BuildValue("(NNK)", opt_u64(n[i].has_time, n[i].time), opt_i64(n[i].has_tid, n[i].tid),
                            (unsigned long long)n[i].cookie);
        if (!t || PyList_Append(l, t) < 0) { Py_XDECREF(t); Py_DECREF(l); return NULL; }
        Py_DECREF(t);
    }
    return l;
}

/* Everything counted, for accel.py to put into a StitchReport. */
static PyObject *Engine_state(Engine *e, PyObject *noarg) {
    if (cleared(e)) return NULL;
    PyObject *cells = PyList_New(0);
    for (size_t i = 0; cells && i < e->ncells; i++) {
        Cell *c = &e->cells[i];
        PyObject *n = PyTuple_New(NKEYS), *f = PyTuple_New(NKEYS);
        for (int k = 0; n && f && k < NKEYS; k++) {
            PyTuple_SET_ITEM(n, k, PyLong_FromUnsignedLongLong(c->n[k]));
            PyTuple_SET_ITEM(f, k, PyLong_FromUnsignedLongLong(c->first[k]));
        }
        PyObject *t = n && f ? Py_BuildValue("(NNNNOK)", opt_i64(!c->tid_none, c->tid), opt_i64(!c->cpu_none, c->cpu),
                                             n, f, c->comm ? c->comm : Py_None,
                                             (unsigned long long)c->comm_seq) : NULL;
        if (!t || PyList_Append(cells, t) < 0) { Py_XDECREF(t); Py_CLEAR(cells); break; }
        Py_DECREF(t);
    }
    PyObject *unm = PyTuple_New(NKEYS);
    for (int k = 0; unm && k < NKEYS; k++) PyTuple_SET_ITEM(unm, k, PyLong_FromUnsignedLongLong(e->sc.unmatched[k]));
    return Py_BuildValue(
        "{s:K,s:K,s:K,s:K,s:K,s:N,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:N,s:N,s:N,s:N,s:N,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:O,s:O,s:K}",
        "samples", e->sc.samples, "not_chosen", e->sc.not_chosen, "stitched", e->sc.stitched, "stitched_after_stack", e->sc.after_stack,
        "passed", e->sc.passed, "unmatched", unm, "deferred_records", e->sc.deferred_records,
        "duplicate_deferred", e->sc.duplicates, "orphan_deferred", e->sc.orphans,
        "dropped_frames", e->sc.dropped_frames, "lost_records", e->sc.lost_records,
        "lost_events", e->sc.lost_events, "max_pending", e->sc.max_pending_seen,
        "first_unmatched", noted_list(e->first_unmatched, e->nfirst, 1),
        "orphans", noted_list(e->orphan_list, e->norphan, 0),
        "cells", cells, "counts", u64_dict(e->counts), "dropped", u64_dict(e->dropped),
        "unordered", e->unordered, "max_queued", e->max_queued_seen,
        "forced_flushes", e->forced_flushes, "rounds", e->rounds,
        "deferred_without_tid", e->deferred_without_tid, "rewritten", e->rewritten,
        "truncated", e->truncated, "truncated_frames", e->truncated_frames,
        "comms", e->comms, "big_counts", e->big_counts, "stitched_across_files", e->sc.across);
}

/* a sequence of ints as an int64 array: 0, or -1 with the error set */
static int int_array(PyObject *seq, int64_t **out, size_t *n) {
    PyObject *f = PySequence_Fast(seq, "a sequence of ints");
    if (!f) return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(f);
    *out = malloc((len ? (size_t)len : 1) * sizeof(int64_t));
    if (!*out) { Py_DECREF(f); PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < len; i++) {
        (*out)[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(f, i));
        if ((*out)[i] == -1 && PyErr_Occurred()) { Py_DECREF(f); return -1; }
    }
    *n = (size_t)len;
    Py_DECREF(f);
    return 0;
}

static void select_free(Select *q) {
    free(q->pids); free(q->tids); free(q->cpus); free(q->ranges);
    Py_CLEAR(q->comms);
    memset(q, 0, sizeof(*q));
}

/* select(pids, tids, comms, cpus, ranges): selection.Selection's fields, each None or a list
 * (ranges: [(start, end)]); before the first feed() */
static PyObject *Engine_select(Engine *e, PyObject *args) {
    PyObject *pids, *tids, *comms, *cpus, *ranges;
    if (!PyArg_ParseTuple(args, "OOOOO", &pids, &tids, &comms, &cpus, &ranges)) return NULL;
    Select *q = &e->sel;
    select_free(q);
    if ((pids != Py_None && (q->has_pids = 1, int_array(pids, &q->pids, &q->npids) < 0))
            || (tids != Py_None && (q->has_tids = 1, int_array(tids, &q->tids, &q->ntids) < 0))
            || (cpus != Py_None && (q->has_cpus = 1, int_array(cpus, &q->cpus, &q->ncpus) < 0))
            || (comms != Py_None && !(q->comms = PySet_New(comms)))) {
        select_free(q);
        return NULL;
    }
    if (ranges != Py_None) {
        int64_t *flat; size_t n;
        PyObject *items = PySequence_List(ranges), *all = items ? PyList_New(0) : NULL;
        for (Py_ssize_t i = 0; all && i < PyList_GET_SIZE(items); i++) {
            PyObject *r = PySequence_Tuple(PyList_GET_ITEM(items, i));
            if (!r || PyTuple_GET_SIZE(r) != 2 || PyList_Append(all, PyTuple_GET_ITEM(r, 0)) < 0
                    || PyList_Append(all, PyTuple_GET_ITEM(r, 1)) < 0) {
                if (r && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "ranges: (start, end) pairs");
                Py_XDECREF(r); Py_CLEAR(all);
                break;
            }
            Py_DECREF(r);
        }
        Py_XDECREF(items);
        if (!all || int_array(all, &flat, &n) < 0) { Py_XDECREF(all); select_free(q); return NULL; }
        Py_DECREF(all);
        q->ranges = (uint64_t *)flat;
        q->nranges = n / 2;
    }
    q->on = 1;
    Py_RETURN_NONE;
}

/* ---- kallsyms (symbols/kallsyms.py columns(), the definition) --------------------------- */
typedef struct { uint64_t start; uint32_t idx; } KsKey;
typedef struct {
    PyObject *module;                       /* None: the kernel's */
    KsKey *key; unsigned char *bind; uint32_t *off, *len;
    size_t n, cap;
} KsGroup;

static int ks_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static int ks_hex(unsigned char c) { return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); }
static int ks_cmp(const void *a, const void *b) {
    const KsKey *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start ? 1 : x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int ks_push(KsGroup *g, uint64_t start, unsigned char bind, uint32_t off, uint32_t len) {
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 1024;
        KsKey *k = realloc(g->key, cap * sizeof(KsKey));
        if (k) g->key = k;
        unsigned char *b = realloc(g->bind, cap);
        if (b) g->bind = b;
        uint32_t *o = realloc(g->off, cap * 4);
        if (o) g->off = o;
        uint32_t *l = realloc(g->len, cap * 4);
        if (l) g->len = l;
        if (!k || !b || !o || !l) { PyErr_NoMemory(); return -1; }
        g->cap = cap;
    }
    g->key[g->n].start = start; g->key[g->n].idx = (uint32_t)g->n;
    g->bind[g->n] = bind; g->off[g->n] = off; g->len[g->n] = len;
    g->n++;
    return 0;
}

/* kallsyms_columns(data): (the address of _text or None, [(module or None, starts as native u64,
 * binds, name offsets and lengths in data as native u32)]), each group sorted by start, equal
 * starts in the file's order: kallsyms.py columns() line for line, the names left in the text */
static PyObject *kallsyms_columns(PyObject *self, PyObject *arg) {
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *d = b.buf;
    size_t n = (size_t)b.len, pos = 0, ng = 0, gcap = 0;
    KsGroup *gs = NULL;
    PyObject *out = NULL, *text = NULL;
    int have_text = 0;
    uint64_t text_addr = 0;
    if (n > UINT32_MAX) { PyErr_SetString(PyExc_ValueError, "kallsyms: over 4 GiB"); goto done; }
    while (pos < n) {
        const unsigned char *nl = memchr(d + pos, '\n', n - pos);
        size_t end = nl ? (size_t)(nl - d) : n, tok[4][2], nt = 0, i = pos;
        while (i < end && nt < 4) {                 /* bytes.split(): ASCII white space */
            while (i < end && ks_space(d[i])) i++;
            if (i >= end) break;
            size_t t = i;
            while (i < end && !ks_space(d[i])) i++;
            tok[nt][0] = t; tok[nt][1] = i - t; nt++;
        }
        pos = end + 1;
        if (nt < 3 || tok[0][1] < 1 || tok[0][1] > 16) continue;
        uint64_t addr = 0;
        size_t k;
        for (k = 0; k < tok[0][1] && ks_hex(d[tok[0][0] + k]); k++) {
            unsigned char c = d[tok[0][0] + k];
            addr = (addr << 4) | (uint64_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
        }
        if (k < tok[0][1]) continue;
        if (!have_text && tok[2][1] == 5 && !memcmp(d + tok[2][0], "_text", 5)) { have_text = 1; text_addr = addr; }
        if (tok[1][1] != 1 || !memchr("TWDBtwdb", d[tok[1][0]], 8)) continue;
        unsigned char t = d[tok[1][0]];
        unsigned char bind = (t == 'W' || t == 'w') ? 2 : (t >= 'A' && t <= 'Z') ? 1 : 0;  /* WEAK, GLOBAL, LOCAL */
        PyObject *module = NULL;
        if (nt > 3 && d[tok[3][0]] == '[') {        /* bytes.strip(b"[]") */
            size_t a = tok[3][0], z = tok[3][0] + tok[3][1];
            while (a < z && (d[a] == '[' || d[a] == ']')) a++;
            while (z > a && (d[z - 1] == '[' || d[z - 1] == ']')) z--;
            module = PyUnicode_DecodeUTF8((const char *)d + a, (Py_ssize_t)(z - a), "replace");
            if (!module) goto done;
        }
        KsGroup *g = NULL;
        for (size_t j = 0; j < ng && !g; j++) {
            if (!module ? gs[j].module == Py_None
                    : gs[j].module != Py_None && PyUnicode_Compare(gs[j].module, module) == 0) g = &gs[j];
        }
        if (!g) {
            if (ng == gcap) {
                size_t cap = gcap ? 2 * gcap : 16;
                KsGroup *x = realloc(gs, cap * sizeof(KsGroup));
                if (!x) { Py_XDECREF(module); PyErr_NoMemory(); goto done; }
                gs = x; gcap = cap;
            }
            g = &gs[ng++];
            memset(g, 0, sizeof(*g));
            g->module = module ? module : Py_None;
            Py_INCREF(g->module);
        }
        Py_XDECREF(module);
        if (ks_push(g, addr, bind, (uint32_t)tok[2][0], (uint32_t)tok[2][1]) < 0) goto done;
    }
    if (have_text && !(text = PyLong_FromUnsignedLongLong(text_addr))) goto done;
    PyObject *list = PyList_New(0);
    if (!list) goto done;
    for (size_t j = 0; j < ng; j++) {
        KsGroup *g = &gs[j];
        size_t down = 1;                            /* /proc/kallsyms is mostly in order */
        while (down < g->n && g->key[down - 1].start <= g->key[down].start) down++;
        if (down < g->n) qsort(g->key, g->n, sizeof(KsKey), ks_cmp);
        PyObject *st = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(8 * g->n));
        PyObject *bi = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)g->n);
        PyObject *of = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(4 * g->n));
        PyObject *ln = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(4 * g->n));
        if (st && bi && of && ln) {
            uint64_t *S = (uint64_t *)PyBytes_AS_STRING(st);
            unsigned char *B = (unsigned char *)PyBytes_AS_STRING(bi);
            uint32_t *O = (uint32_t *)PyBytes_AS_STRING(of), *L = (uint32_t *)PyBytes_AS_STRING(ln);
            for (size_t i = 0; i < g->n; i++) {
                uint32_t x = g->key[i].idx;
                S[i] = g->key[i].start; B[i] = g->bind[x]; O[i] = g->off[x]; L[i] = g->len[x];
            }
        }
        PyObject *t = st && bi && of && ln ? PyTuple_Pack(5, g->module, st, bi, of, ln) : NULL;
        Py_XDECREF(st); Py_XDECREF(bi); Py_XDECREF(of); Py_XDECREF(ln);
        if (!t || PyList_Append(list, t) < 0) { Py_XDECREF(t); Py_DECREF(list); goto done; }
        Py_DECREF(t);
    }
    out = Py_BuildValue("(ON)", text ? text : Py_None, list);
done:
    Py_XDECREF(text);
    for (size_t j = 0; j < ng; j++) {
        Py_DECREF(gs[j].module);
        free(gs[j].key); free(gs[j].bind); free(gs[j].off); free(gs[j].len);
    }
    free(gs);
    PyBuffer_Release(&b);
    return out;
}

/* bins(t0, width): MODE_COUNTED and MODE_CHAINS keep a stack's samples apart per time slice
 * [t0 + i * width, t0 + (i + 1) * width): each aggregate's first time names its slice */
static PyObject *Engine_bins(Engine *e, PyObject *args) {
    unsigned long long t0, width;
    if (!PyArg_ParseTuple(args, "KK", &t0, &width)) return NULL;
    e->bin_t0 = t0; e->bin_width = width;
    Py_RETURN_NONE;
}

static int Engine_init(Engine *e, PyObject *args, PyObject *kw) {
    static char *names[] = {"plan", "mode", "keep", "note", "decompress", "decode", "record",
                            "format_error", "max_pending", "window", "exit_grace", "max_queued", NULL};
    PyObject *plan, *note_cb, *dec_cb, *decode_cb, *rec_cls, *ferr;
    Py_buffer keep;
    unsigned long long mp, win, grace, mq;
    if (e->comms) {
        PyErr_SetString(PyExc_RuntimeError, "an engine is initialised once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oiy*OOOOOKKKK", names, &plan, &e->mode, &keep, &note_cb,
                                     &dec_cb, &decode_cb, &rec_cls, &ferr, &mp, &win, &grace, &mq))
        return -1;
    if (keep.len != 65536) { PyBuffer_Release(&keep); PyErr_SetString(PyExc_ValueError, "keep: 65536 flags"); return -1; }
    memcpy(e->keep, keep.buf, 65536);
    PyBuffer_Release(&keep);
    e->out_fd = -1;
    sc_init(&e->sc, e, mp, grace);
    e->window = win; e->max_queued = mq;
    Py_INCREF(note_cb); Py_INCREF(dec_cb); Py_INCREF(decode_cb); Py_INCREF(rec_cls); Py_INCREF(ferr);
    e->note_cb = note_cb; e->decompress_cb = dec_cb; e->decode_cb = decode_cb; e->record_cls = rec_cls;
    e->format_error = ferr;
    e->comms = PyDict_New();
    e->big_counts = PyDict_New();
    e->events = PyList_New(0);
    if (!e->comms || !e->big_counts || !e->events || map_init(&e->tasks, 1024) < 0
            || map_init(&e->comm_of, 1024) < 0 || map_init(&e->exited, 64) < 0
            || map_init(&e->cellmap, 256) < 0)
        return -1;
    return load_plan(e, plan);
}

/* The callbacks may hold what owns the engine: a cycle, so the engine takes part in garbage
 * collection. */
static int Engine_traverse(Engine *e, visitproc visit, void *arg) {
    Py_VISIT(e->note_cb); Py_VISIT(e->decompress_cb); Py_VISIT(e->decode_cb); Py_VISIT(e->record_cls);
    Py_VISIT(e->format_error); Py_VISIT(e->sink_error); Py_VISIT(e->comms); Py_VISIT(e->big_counts); Py_VISIT(e->events);
    return 0;
}

static int Engine_clear(Engine *e) {
    Py_CLEAR(e->note_cb); Py_CLEAR(e->decompress_cb); Py_CLEAR(e->decode_cb); Py_CLEAR(e->record_cls);
    Py_CLEAR(e->format_error); Py_CLEAR(e->sink_error); Py_CLEAR(e->comms); Py_CLEAR(e->big_counts); Py_CLEAR(e->events);
    return 0;
}

static void Engine_dealloc(Engine *e) {
    PyObject_GC_UnTrack(e);
    while (q_len(e)) rec_free(e, q_pop(e));
    for (size_t i = 0; i < e->flen; i++) {
        FItem *it = &e->fifo[(e->fhead + i) % e->fcap];
        if (it->s) samp_free(e, it->s); else rec_free(e, it->rec);
    }
    if (e->tasks.s)
        for (size_t i = 0; i < e->tasks.cap; i++)
            if (e->tasks.s[i].val) { ScTask *t = e->tasks.s[i].val; stack_put((Stack *)t->stack); free(t); }
    for (size_t i = 0; i < e->ncells; i++) Py_XDECREF(e->cells[i].comm);
    free(e->tasks.s); free(e->by_id.s); free(e->cellmap.s); free(e->cells); free(e->lay);
    free(e->zin); free(e->heap); free(e->run); free(e->fifo); sc_free(&e->sc); free(e->out);
    for (size_t i = 0; i < e->nagg; i++) { Py_XDECREF(e->aggs[i].comm); free(e->aggs[i].ips); }
    free(e->aggs); free(e->aslot); free(e->scratch);
    select_free(&e->sel);
    pools_free(e);
    if (e->comm_of.s)
        for (size_t i = 0; i < e->comm_of.cap; i++) Py_XDECREF((PyObject *)e->comm_of.s[i].val);
    free(e->comm_of.s);
    free(e->exited.s);
    Engine_clear(e);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

static PyMethodDef Engine_methods[] = {
    {"feed", (PyCFunction)Engine_feed, METH_VARARGS,
     "feed(buffer, start, length, offset): frame, order, stitch the whole ordinary records; bytes taken"},
    {"foreign", (PyCFunction)Engine_foreign, METH_O, "foreign(record): a record the reader framed"},
    {"finish", (PyCFunction)Engine_finish, METH_NOARGS, "end of input: flush, give up what waits"},
    {"bins", (PyCFunction)Engine_bins, METH_VARARGS,
     "bins(t0, width): counted stacks kept apart per time slice of width ns from t0"},
    {"select", (PyCFunction)Engine_select, METH_VARARGS,
     "select(pids, tids, comms, cpus, ranges): only these samples are counted and output"},
    {"abort", (PyCFunction)Engine_finish, METH_NOARGS,
     "abort(): the reader met damage (its error is the caller's to raise): finish with what came before; "
     "a damaged record the sorter held raises its own error"},
    {"output", (PyCFunction)Engine_output, METH_NOARGS, "the output so far (bytes, events or None)"},
    {"progress", (PyCFunction)Engine_progress, METH_NOARGS, "(records, samples) so far"},
    {"sink", (PyCFunction)Engine_sink, METH_VARARGS,
     "sink(fd, error): MODE_FILE writes its records to fd itself; output() gives None or foreign records"},
    {"sunk", (PyCFunction)Engine_sunk, METH_NOARGS, "bytes written to the sink so far"},
    {"leftover", (PyCFunction)Engine_leftover, METH_NOARGS, "(bytes of a cut compressed record, offset)"},
    {"boundary", (PyCFunction)Engine_boundary, METH_NOARGS,
     "the next file of a sequence starts (its boundary: the latest record time read so far)"},
    {"state", (PyCFunction)Engine_state, METH_NOARGS, "the counts, for a StitchReport"},
    {NULL}
};

static PyTypeObject EngineType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "deferstitch._accel.Engine",
    .tp_basicsize = sizeof(Engine),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)Engine_traverse,
    .tp_clear = (inquiry)Engine_clear,
    .tp_doc = "The stitch pipeline for one perf.data data section (see the module docstring).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Engine_init,
    .tp_dealloc = (destructor)Engine_dealloc,
    .tp_methods = Engine_methods,
};

static PyMethodDef accel_functions[] = {
    {"kallsyms_columns", kallsyms_columns, METH_O,
     "kallsyms_columns(data): the symbols of a kallsyms text, as symbols/kallsyms.py columns()"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef accel_module = {
    PyModuleDef_HEAD_INIT, "deferstitch._accel",
    "The stitch pipeline's per-record work in C (see _accel.c).", -1, accel_functions
};

PyMODINIT_FUNC PyInit__accel(void) {
    if (PyType_Ready(&EngineType) < 0) return NULL;
    PyObject *m = PyModule_Create(&accel_module);
    if (!m) return NULL;
    Limit = PyErr_NewException("deferstitch._accel.Limit", NULL, NULL);
    Py_INCREF(&EngineType);
    if (PyModule_AddObject(m, "Engine", (PyObject *)&EngineType) < 0 ||
        PyModule_AddObject(m, "Limit", Limit) < 0 || twin_export(m) < 0)
        return NULL;
    PyModule_AddIntConstant(m, "MODE_FILE", MODE_FILE);
    PyModule_AddIntConstant(m, "MODE_EVENTS", MODE_EVENTS);
    PyModule_AddIntConstant(m, "MODE_NONE", MODE_NONE);
    PyModule_AddIntConstant(m, "MODE_ORDERED", MODE_ORDERED);
    PyModule_AddIntConstant(m, "MODE_COUNTED", MODE_COUNTED);
    PyModule_AddIntConstant(m, "MODE_CHAINS", MODE_CHAINS);
    PyModule_AddIntConstant(m, "MODE_OUTCOMES", MODE_OUTCOMES);
    return m;
}
