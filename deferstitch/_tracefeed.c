/* deferstitch._tracedat.Feed: tracecmd/reader.py's FtraceFeed, step for step, on the page
 * walkers (_tracedat.c) of a trace.dat's buffers, with stitcher.py's cookie rules from
 * _stitchcore.h (shared with the perf.data engine, _accel.c): one stitcher per buffer, fed
 * the samples this file closes and the stacks it reads; its callbacks ("the stitcher" below)
 * narrow a lost stack's reason by the CPUs' loss windows as the reader does.
 *
 *   buffer 0 Walker -> head -.                        per buffer: its CPUs' open events,
 *   buffer 1 Walker -> head --+-> earliest head --->  its stitcher, its loss windows  --> FIFO
 *   (-B instances)           '   (ties: lower buffer; heapq.merge in bridge.Trace)         |
 *                                  a field C cannot read as Python does: slow(kind, rec)   v
 *                                                                      sink (time order)
 *
 * The Python modules stay the definition (tracecmd/engine.py drives this; tests/
 * test_tracecmd_engine.py checks the same bytes on every trace.dat of the tests). Each field is
 * read here only where the Python reader's fast branch would read it (bridge.Field: a number
 * at a fixed place that the record holds, an array that lies inside the record); anything else
 * (a short record, a format that lacks the field, a variant) is asked of Python, at the same
 * point of the sequence, so its value or its FormatError is the Python path's. inode_cache is
 * always Python's (FtraceFeed._inode, into the shared `paths` dict), and what the sink was
 * given is handed over before it, so names see the same inode_cache as on the Python path.
 *
 * Numbers are kept as Python would see them (__int128: u64 and s64 alike), so a signed field
 * compares as it does there. Memory: what is open per CPU, what waits for its stack, the FIFO
 * head (up to SPILL_AT, then spilled to a file: spill()), each task's last kernel entries and
 * stack (as the Python feed), a table of kernel and one of user frames (4096 each at most).
 */
#include "_tracedat.h"

typedef __int128 I128;

/* the stitcher: _stitchcore.h's rules, one stitcher per buffer (FtraceFeed._BufferStitcher) */
typedef struct Buf Buf;
typedef struct Feed Feed;
#define SC_TID I128
#define SC_COOKIE I128
#define SC_CTX Buf
#include "_stitchcore.h"      /* and _twin.h: the outcome keys, KEEP_FIRST, the modes */

enum { R_PLAIN, R_KERNEL, R_COOKIE, R_USTACK, R_UNWIND, R_INODE, R_EXIT, R_FORK };
/* slow(kind, record): what Python reads where C does not (engine.py SLOW, same order) */
enum { S_KERNEL, S_COOKIE, S_UCALLERS, S_TGID, S_STACK, S_KEYS, S_DEVS, S_INODE, S_EXIT, S_FORK };
/* field specs: absent, Python's, a number at a fixed place, a static array, a __data_loc array,
 * a string (char[N] or __data_loc char[]) */
enum { F_ABSENT, F_SLOW, F_SCALAR, F_STATIC, F_DYNAMIC, F_STRING, F_DYNSTRING };
/* the anomalies counted here (engine.py ANOMALIES, same order) */
enum { A_NOTYPE, A_NOCOUNT, A_KS_ALONE, A_COOKIE_ALONE, A_USTACK_ALONE, A_NO_INODE, A_NO_KEY,
       NANOM };
#define MAX_ENTRIES 64
#define BATCH 2048

typedef struct { int kind, off, size, elem, sign, rel; } Spec;
typedef struct { int role; Spec f[4]; } TypeInfo;

typedef struct Stk {
    ScStack sc;                         /* cookie, time, served: the rules' */
    PyObject *frames;
} Stk;

typedef struct Smp {
    ScSamp sc;                          /* tid, time, cookie, outcome, ...: the rules' */
    I128 pid;
    int cpu, type;
    uint64_t seq;
    PyObject *kernel, *user;            /* tuples (owned); user NULL: none */
} Smp;

typedef struct {
    uint64_t ts;
    I128 pid;
    int type, role, has_cookie, has_tgid, has_exit;
    I128 cookie, tgid, exit;            /* exit: sched_process_exit's pid, fork's child_pid */
    PyObject *kernel, *ustack, *rec;    /* NULL: not set; rec: the record, for slow() at close */
} Pend;

typedef struct {
    int id, n;
    uint64_t ostamp, last;              /* when its open queue began (dict order); last record */
    int has_last;
    Pend open[MAX_NEST + 1];
} CpuSt;

typedef struct { I128 cookie; uint64_t first; } Entry;

typedef struct Task {
    ScTask sc;                          /* what waits, its stack: the rules' */
    int nent;                           /* its last kernel entries (FtraceFeed._entry): kept */
    Entry ent[MAX_ENTRIES + 1];         /* while the feed runs, as the Python feed's dict */
} Task;

typedef struct { I128 key; void *val; int used; } Slot;
typedef struct { Slot *s; size_t cap, n; } Map;

typedef struct { I128 tid; int cpu, key; long long n; } Cell;
typedef struct { uint64_t b, a; int has_a; } Window;

/* a record as walker_next hands it out: copied, the walker already at the CPU's next one */
typedef struct {
    int cpu, index;                     /* the CPU number; its walker index */
    uint64_t ts;
    long long missed;
    int64_t off;
    const unsigned char *d;
    uint32_t len;
    int type, pid;
    PyObject *obj;
} Rec;

/* one trace buffer (the top one, or a -B instance): its stitcher (FtraceFeed._BufferStitcher)
 * and its share of the report (_BufferCounts) */
struct Buf {
    Feed *f;
    Walker *w;
    int nst, npeek;
    CpuSt *st;                          /* by walker CPU (the first of its id) */
    int *st_of;                         /* walker CPU index -> st index */
    int *peek_ids;                      /* peek(cpu) for cpu in range(cpus): the walker CPU id */
    ScStitcher sc;                      /* its counts: the buffer's share of the report */
    Map tasks;                          /* tid -> Task */
    Window *win;
    size_t nwin, wcap, prune_at;
    unsigned __int128 lost_events;      /* exact (the report's total saturates: sc's) */
    int has_head;                       /* its next record, taken (heapq.merge holds it) */
    Rec head;
    unsigned char *head_data;
};

struct Feed {
    PyObject_HEAD
    PyObject *walkers;
    PyObject *sink, *slow, *paths, *no_file, *anon, *unknown_path;
    int mode, ntypes, nbuf, failed;
    Buf *bufs;
    TypeInfo *types;                    /* by type id; role -1: no format */
    uint64_t *counts, counts_none;      /* events by type id; of a type with no format */
    uint64_t no_vma;
    uint64_t stamp;
    Smp **fifo;
    size_t fhead, flen, fcap;
    size_t compact_at;                  /* not FEED_MODE_SAMPLES: compact() past this length */
    struct KEnt *kc;                    /* the kernel stacks seen: one tuple each (kernel_tuple) */
    size_t kcn;
    PyObject *ucache;                   /* {frames: frames}: one tuple of equal user frames */
    /* FEED_MODE_SAMPLES: the FIFO's settled head spilled to a file while it waits (spill()) */
    FILE *sp;
    long long sp_w, sp_r;               /* its write and read offsets */
    int sp_have;                        /* sp_cur read ahead, not yet handed on */
    int sp_off;                         /* no temporary file to be had: kept in memory */
    struct SpEnt *sp_cur;
    Smp **sp_pend;                      /* the spilled samples still waiting, in order */
    size_t sp_np, sp_phead, sp_pcap;
    PyObject *sp_objs, *sp_ids;         /* the kernel and user tuples they name: [obj], {id: i} */
    Py_ssize_t spill_at;                /* SPILL_AT, or the tests' smaller one */
    uint64_t seq;
    /* the report: the stitchers' counts are the buffers' (b->sc) */
    unsigned long long anom[NANOM];
    PyObject *first_unmatched, *orphans, *batch;
    Cell *cells;
    size_t ncells, ccap;
    Map cellmap;
    PyObject *last_frames;              /* FEED_MODE_RESOLVED: the batch's last (frames, n) */
    int finished;
};

/* ---- small things ------------------------------------------------------------------------ */
static PyObject *num(I128 v) {
    if (v >= INT64_MIN && v <= INT64_MAX)
        return PyLong_FromLongLong((long long)v);
    return PyLong_FromUnsignedLongLong((unsigned long long)v);
}

static int to_num(PyObject *o, I128 *v) {
    if (!PyLong_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "slow(): a number expected");
        return -1;
    }
    int over = 0;
    long long x = PyLong_AsLongLongAndOverflow(o, &over);
    if (over > 0) {
        unsigned long long u = PyLong_AsUnsignedLongLong(o);
        if (u == (unsigned long long)-1 && PyErr_Occurred())
            return -1;
        *v = (I128)u;
        return 0;
    }
    if (over < 0 || (x == -1 && PyErr_Occurred())) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_OverflowError, "slow(): a number past 64 bits");
        return -1;
    }
    *v = x;
    return 0;
}

static inline size_t hkey(I128 k) {
    uint64_t x = (uint64_t)k ^ ((uint64_t)((unsigned __int128)k >> 64) * 0x9e3779b97f4a7c15ULL);
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33;
    return (size_t)x;
}

static int map_grow(Map *m) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    Slot *s = PyMem_Calloc(cap, sizeof(Slot));
    if (!s)
        return PyErr_NoMemory(), -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->s[i].used) {
            size_t j = hkey(m->s[i].key) & (cap - 1);
            while (s[j].used)
                j = (j + 1) & (cap - 1);
            s[j] = m->s[i];
        }
    PyMem_Free(m->s);
    m->s = s;
    m->cap = cap;
    return 0;
}

static void *map_get(Map *m, I128 k) {
    if (!m->cap)
        return NULL;
    for (size_t j = hkey(k) & (m->cap - 1); m->s[j].used; j = (j + 1) & (m->cap - 1))
        if (m->s[j].key == k)
            return m->s[j].val;
    return NULL;
}

static int map_put(Map *m, I128 k, void *v) {      /* k not in m */
    if ((m->n + 1) * 2 > m->cap && map_grow(m) < 0)
        return -1;
    size_t j = hkey(k) & (m->cap - 1);
    while (m->s[j].used)
        j = (j + 1) & (m->cap - 1);
    m->s[j].key = k;
    m->s[j].val = v;
    m->s[j].used = 1;
    m->n++;
    return 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = PyMem_Realloc(*p, c * size);
    if (!q)
        return PyErr_NoMemory(), -1;
    *p = q;
    *cap = c;
    return 0;
}

static Task *task(Buf *b, I128 tid) {
    Task *t = map_get(&b->tasks, tid);
    if (t)
        return t;
    t = PyMem_Calloc(1, sizeof(Task));
    if (!t)
        return PyErr_NoMemory(), NULL;
    t->sc.tid = tid;
    if (map_put(&b->tasks, tid, t) < 0) {
        PyMem_Free(t);
        return NULL;
    }
    return t;
}

/* ---- fields (bridge.Field's fast branches) ---------------------------------------------- */
static inline I128 elem_at(const Walker *w, const unsigned char *p, int size, int sign) {
    uint64_t v = td_rdnum(w, p, size);
    if (sign && size < 8 && (v >> (8 * size - 1)) & 1)
        return (I128)v - ((I128)1 << (8 * size));
    return sign ? (I128)(int64_t)v : (I128)v;
}

/* Event.number(): 1 read, 0 absent, -1 Python's to read */
static int scalar(const Feed *f, const Spec *s, const unsigned char *d, uint32_t len, I128 *v) {
    if (s->kind == F_ABSENT)
        return 0;
    if (s->kind != F_SCALAR || (int64_t)s->off + s->size > len)
        return -1;
    *v = elem_at(f->bufs[0].w, d + s->off, s->size, s->sign);
    return 1;
}

/* Event.numbers() / Field.read() of an array: 1 with (start, n), 0 absent, -1 Python's */
static int array(const Feed *f, const Spec *s, const unsigned char *d, uint32_t len,
                 int64_t *start, int64_t *n) {
    if (s->kind == F_ABSENT)
        return 0;
    int64_t st, length;
    if (s->kind == F_STATIC) {
        st = s->off;
        length = s->size;
    } else if (s->kind == F_DYNAMIC) {
        if ((int64_t)s->off + 4 > len)
            return -1;
        uint32_t v = rd4(f->bufs[0].w, d + s->off);
        st = v & 0xFFFF;
        length = v >> 16;
        if (s->rel)
            st += s->off + s->size;
    } else {
        return -1;
    }
    if (st < 0 || length < 0 || st + length > len)
        return -1;
    *start = st;
    *n = length / s->elem;
    return 1;
}

/* Event.text(): a new str, Py_None absent (the caller's default), NULL: Python's to read */
static PyObject *text(const Feed *f, const Spec *s, const unsigned char *d, uint32_t len) {
    if (s->kind == F_ABSENT)
        Py_RETURN_NONE;
    int64_t st, length;
    if (s->kind == F_STRING) {
        st = s->off;
        length = s->size;
    } else if (s->kind == F_DYNSTRING) {
        if ((int64_t)s->off + 4 > len)
            return NULL;
        uint32_t v = rd4(f->bufs[0].w, d + s->off);
        st = v & 0xFFFF;
        length = v >> 16;
        if (s->rel)
            st += s->off + s->size;
    } else {
        return NULL;
    }
    int64_t end = st + length > len ? len : st + length;   /* data[start:start + length] */
    if (st > end)
        st = end;
    const unsigned char *nul = memchr(d + st, 0, (size_t)(end - st));
    return PyUnicode_DecodeUTF8((const char *)d + st, (nul ? nul - (d + st) : end - st), "replace");
}

static PyObject *slow(Feed *f, int kind, PyObject *rec) {
    if (!f->slow)
        return PyErr_SetString(PyExc_RuntimeError, "Feed: cleared"), NULL;
    return PyObject_CallFunction(f->slow, "iO", kind, rec);
}

/* The kernel stacks seen, by their raw callers: one tuple each, shared by every sample of that
 * stack, so a sample waiting in the FIFO holds a reference instead of its own tuple of ~16 ints
 * (400 bytes a waiting sample otherwise). At most KC_MAX stacks, then the table starts over:
 * its memory stays bounded whatever the file (values are equal either way: outputs unchanged). */
#define KC_SLOTS 8192
#define KC_MAX (KC_SLOTS / 2)
#define UC_MAX 4096
typedef struct KEnt { uint64_t h; uint32_t len; unsigned char *raw; PyObject *t; } KEnt;

static void kc_clear(Feed *f) {
    if (f->kc)
        for (size_t i = 0; i < KC_SLOTS; i++)
            if (f->kc[i].t) {
                Py_DECREF(f->kc[i].t);
                PyMem_Free(f->kc[i].raw);
                f->kc[i].t = NULL;
            }
    f->kcn = 0;
}

static PyObject *trimmed(Feed *f, const unsigned char *p, int64_t n, int elem, int sign, int pairs);

/* trimmed(p, n, elem, sign, 0) of a kernel_stack, from the table when these bytes were seen */
static PyObject *kernel_tuple(Feed *f, const unsigned char *p, int64_t n, int elem, int sign) {
    if (n < 0 || n * elem > 65536)
        return trimmed(f, p, n, elem, sign, 0);
    uint32_t len = (uint32_t)(n * elem);
    uint64_t h = 1469598103934665603ULL ^ ((uint64_t)elem << 1 | (uint64_t)sign);
    for (uint32_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    if (!f->kc && !(f->kc = PyMem_Calloc(KC_SLOTS, sizeof(KEnt))))
        return PyErr_NoMemory();
    size_t i = h & (KC_SLOTS - 1);
    for (; f->kc[i].t; i = (i + 1) & (KC_SLOTS - 1))
        if (f->kc[i].h == h && f->kc[i].len == len && !memcmp(f->kc[i].raw, p, len)) {
            Py_INCREF(f->kc[i].t);
            return f->kc[i].t;
        }
    PyObject *t = trimmed(f, p, n, elem, sign, 0);
    if (!t)
        return NULL;
    if (f->kcn >= KC_MAX) {             /* full: start over (no probe chain to mend) */
        kc_clear(f);
        i = h & (KC_SLOTS - 1);
    }
    unsigned char *raw = PyMem_Malloc(len ? len : 1);
    if (!raw)
        return t;                       /* not kept: still the right tuple */
    memcpy(raw, p, len);
    Py_INCREF(t);
    f->kc[i] = (KEnt){h, len, raw, t};
    f->kcn++;
    return t;
}

/* the values up to ftrace's end markers (reader._trim), as a tuple; pairs: (None, a) each */
static PyObject *trimmed(Feed *f, const unsigned char *p, int64_t n, int elem, int sign, int pairs) {
    int64_t k = 0;
    for (; k < n; k++) {
        I128 v = elem_at(f->bufs[0].w, p + k * elem, elem, sign);
        if (v == 0 || v == (I128)f->no_vma)
            break;
    }
    PyObject *t = PyTuple_New(k);
    if (!t)
        return NULL;
    for (int64_t i = 0; i < k; i++) {
        PyObject *v = num(elem_at(f->bufs[0].w, p + i * elem, elem, sign));
        if (v && pairs) {
            PyObject *pr = PyTuple_Pack(2, Py_None, v);
            Py_DECREF(v);
            v = pr;
        }
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

/* FtraceFeed._kernel: the kernel frames of a kernel_stack record */
static PyObject *kernel_frames(Feed *f, const TypeInfo *ti, const unsigned char *d, uint32_t len,
                               PyObject *(*rec)(Feed *, void *), void *rc) {
    const Spec *size = &ti->f[0], *caller = &ti->f[1];
    I128 sz = 0;
    int got = size->kind == F_ABSENT ? 0 : scalar(f, size, d, len, &sz);
    if (got >= 0 && (caller->kind == F_ABSENT || caller->kind == F_STATIC)) {
        if (got == 1 && sz >= 0 && caller->kind == F_STATIC) {
            int64_t room = ((int64_t)len - caller->off);
            int64_t n = room < 0 ? 0 : room / caller->elem;
            if ((I128)n > sz)
                n = (int64_t)sz;
            return kernel_tuple(f, d + caller->off, n, caller->elem, caller->sign);
        }
        int64_t st, n;
        int a = array(f, caller, d, len, &st, &n);
        if (a == 0)
            return PyTuple_New(0);
        if (a == 1)
            return kernel_tuple(f, d + st, n, caller->elem, caller->sign);
    }
    PyObject *r = rec(f, rc);
    if (!r)
        return NULL;
    PyObject *v = slow(f, S_KERNEL, r);
    Py_DECREF(r);
    return v;
}

/* ---- the report --------------------------------------------------------------------------- */
static size_t cell_hash(I128 tid, int cpu, int key) {
    return hkey(tid * 1000003 + (I128)cpu * 131 + key);
}

/* a sample's outcome, counted by the rules (its buffer's sc): the report's list and cells */
static int count(Feed *f, Smp *s) {
    int key = s->sc.outcome;
    if (key != K_STITCHED && key != K_PASSED && PyList_GET_SIZE(f->first_unmatched) < KEEP_FIRST) {
        int none = !s->sc.has_cookie || s->sc.cookie == -1;    /* model.NO_COOKIE */
        PyObject *t = Py_BuildValue("(KNNi)", (unsigned long long)s->sc.time, num(s->sc.tid),
                                    none ? (Py_INCREF(Py_None), Py_None) : num(s->sc.cookie), key);
        if (!t || PyList_Append(f->first_unmatched, t) < 0) {
            Py_XDECREF(t);
            return -1;
        }
        Py_DECREF(t);
    }
    /* cells: (tid, cpu, key) -> n, in first-seen order (the report's views) */
    Map *m = &f->cellmap;
    I128 h = (I128)cell_hash(s->sc.tid, s->cpu, key);
    if (m->cap)
        for (size_t j = hkey(h) & (m->cap - 1); m->s[j].used; j = (j + 1) & (m->cap - 1)) {
            Cell *c = &f->cells[(size_t)m->s[j].val - 1];
            if (m->s[j].key == h && c->tid == s->sc.tid && c->cpu == s->cpu && c->key == key) {
                c->n++;
                return 0;
            }
        }
    if (grow((void **)&f->cells, &f->ccap, f->ncells + 1, sizeof(Cell)) < 0)
        return -1;
    f->cells[f->ncells] = (Cell){s->sc.tid, s->cpu, key, 1};
    f->ncells++;
    /* a hash may repeat: map_put probes past equal keys */
    if ((m->n + 1) * 2 > m->cap && map_grow(m) < 0)
        return -1;
    size_t j = hkey(h) & (m->cap - 1);
    while (m->s[j].used)
        j = (j + 1) & (m->cap - 1);
    m->s[j] = (Slot){h, (void *)(f->ncells), 1};
    m->n++;
    return 0;
}

static int flush(Feed *f) {
    if (PyList_GET_SIZE(f->batch) == 0)
        return 0;
    if (!f->sink)
        return PyErr_SetString(PyExc_RuntimeError, "Feed: cleared"), -1;
    PyObject *b = f->batch;
    f->batch = PyList_New(0);
    Py_CLEAR(f->last_frames);
    if (!f->batch) {
        f->batch = b;
        return -1;
    }
    PyObject *r = PyObject_CallFunctionObjArgs(f->sink, b, NULL);
    Py_DECREF(b);
    if (!r)
        return -1;
    Py_DECREF(r);
    return 0;
}

static int batch_add(Feed *f, PyObject *item) {
    if (!item || PyList_Append(f->batch, item) < 0) {
        Py_XDECREF(item);
        return -1;
    }
    Py_DECREF(item);
    return PyList_GET_SIZE(f->batch) >= BATCH ? flush(f) : 0;
}

/* Stitcher._emit: count, then the feed's _resolved (report: the stitched frames to name,
 * [frames, samples] for each run of samples that one stack served) */
static int emit(Feed *f, Smp *s) {
    if (count(f, s) < 0)
        return -1;
    if (f->mode != FEED_MODE_RESOLVED || s->sc.outcome != K_STITCHED)
        return 0;
    PyObject *lf = f->last_frames;
    if (lf && PyList_GET_ITEM(lf, 0) == s->user) {
        PyObject *v = PyLong_FromLongLong(PyLong_AsLongLong(PyList_GET_ITEM(lf, 1)) + 1);
        return v ? PyList_SetItem(lf, 1, v) : -1;
    }
    PyObject *item = PyList_New(2);
    if (!item)
        return -1;
    Py_INCREF(s->user);
    PyList_SET_ITEM(item, 0, s->user);
    PyList_SET_ITEM(item, 1, PyLong_FromLong(1));
    Py_INCREF(item);
    Py_XSETREF(f->last_frames, item);
    return batch_add(f, item);
}

/* ---- the stitcher: _stitchcore.h's callbacks ------------------------------------------------
 * A buffer's tasks stay in its map while the feed runs: their kernel entries (FtraceFeed._entry)
 * outlive what waits. A stack's frames are a tuple, shared with each sample stitched with it. */
static void smp_free(Smp *s) {
    Py_XDECREF(s->kernel);
    Py_XDECREF(s->user);
    PyMem_Free(s);
}

static void stk_free(Stk *st) {
    if (st) {
        Py_XDECREF(st->frames);
        PyMem_Free(st);
    }
}

static ScTask *sc_task_get(Buf *b, I128 tid) {
    Task *t = map_get(&b->tasks, tid);
    return t ? &t->sc : NULL;
}

static ScTask *sc_task_new(Buf *b, I128 tid) {
    Task *t = task(b, tid);
    return t ? &t->sc : NULL;
}

static void sc_task_idle(Buf *b, ScTask *t) {}

static void sc_stack_drop(Buf *b, ScStack *k) { stk_free((Stk *)k); }

static void sc_attach(Buf *b, ScSamp *s, ScStack *k) {
    PyObject *frames = ((Stk *)k)->frames;
    Py_INCREF(frames);
    Py_XSETREF(((Smp *)s)->user, frames);
}

static int sc_emit(Buf *b, ScSamp *s) { return emit(b->f, (Smp *)s); }

static int sc_orphan(Buf *b, I128 tid, ScStack *k) {
    Feed *f = b->f;
    if (PyList_GET_SIZE(f->orphans) < KEEP_FIRST) {
        PyObject *t = Py_BuildValue("(KNN)", (unsigned long long)k->time, num(tid), num(k->cookie));
        if (!t || PyList_Append(f->orphans, t) < 0) {
            Py_XDECREF(t);
            return -1;
        }
        Py_DECREF(t);
    }
    return 0;
}

/* FtraceFeed._entry_span + lost_reason: after-lost-records if a loss window meets (lo, hi) */
static int lost_reason(Buf *b, Task *t, ScSamp *s, uint64_t dtime) {
    uint64_t lo = s->time, hi = dtime;
    for (int i = 0; i < t->nent; i++)
        if (t->ent[i].cookie == s->cookie) {
            if (t->ent[i].first < lo)
                lo = t->ent[i].first;
            if (i + 1 < t->nent && t->ent[i + 1].first < hi)
                hi = t->ent[i + 1].first;
            break;
        }
    size_t a = 0, z = b->nwin;              /* bisect_left(windows, (lo,)) */
    while (a < z) {
        size_t mid = (a + z) / 2;
        if (b->win[mid].b < lo)
            a = mid + 1;
        else
            z = mid;
    }
    for (size_t i = a; i < b->nwin; i++)
        if (!b->win[i].has_a || b->win[i].a <= hi)
            return K_LOST_AFTER;
    for (int k = 0; k < b->npeek; k++) {    /* the windows ending at a CPU's next record */
        Cpu *c = NULL;
        for (int i = 0; i < b->w->ncpus; i++)
            if (b->w->cpus[i].id == b->peek_ids[k] && b->w->cpus[i].has) {
                c = &b->w->cpus[i];
                break;
            }
        if (!c || !c->rec_missed)
            continue;
        CpuSt *ls = NULL;                   /* self.last.get((buf, cpu)): cpu the index */
        for (int i = 0; i < b->nst; i++)
            if (b->st[i].id == k && b->st[i].has_last) {
                ls = &b->st[i];
                break;
            }
        if ((!ls || ls->last <= hi) && c->rec_ts >= lo)
            return K_LOST_AFTER;
    }
    return K_LOST;
}

/* the reader's narrower reason: by the loss windows of the CPUs (FtraceFeed.lost_reason) */
static int sc_lost_reason(Buf *b, ScTask *t, ScSamp *s, uint64_t time, int reason) {
    return lost_reason(b, (Task *)t, s, time);
}

/* ---- the feed: open events per CPU, the FIFO ---------------------------------------------- */
/* the oldest open event of buffer b (or of all buffers, b NULL) */
static int pend_oldest(Feed *f, Buf *b, uint64_t *ts) {
    int any = 0;
    for (int j = 0; j < f->nbuf; j++) {
        Buf *x = &f->bufs[j];
        if (b && x != b)
            continue;
        for (int i = 0; i < x->nst; i++)
            for (int k = 0; k < x->st[i].n; k++)
                if (!any || x->st[i].open[k].ts < *ts) {
                    *ts = x->st[i].open[k].ts;
                    any = 1;
                }
    }
    return any;
}

static PyObject *sample_tuple(Smp *s) {
    return Py_BuildValue("(NNiKiOOiON)", num(s->sc.tid), num(s->pid), s->cpu,
                         (unsigned long long)s->sc.time, s->type, s->kernel,
                         s->user ? s->user : Py_None, s->sc.outcome,
                         s->sc.after_stack ? Py_True : Py_False,
                         s->sc.has_cookie ? num(s->sc.cookie) : (Py_INCREF(Py_None), Py_None));
}

/* Not FEED_MODE_SAMPLES: no sample is handed on in time order, so a resolved one need not wait
 * behind a pending one (a task that never comes back to user space would keep every later
 * sample of the file): free the resolved ones, keep the pending ones in order. Amortized O(1),
 * as stitcher._order's. */
static void compact(Feed *f) {
    size_t k = f->fhead;
    for (size_t i = f->fhead; i < f->flen; i++) {
        Smp *s = f->fifo[i];
        if (s->sc.outcome == SC_PENDING)
            f->fifo[k++] = s;
        else
            smp_free(s);
    }
    f->flen = k;
    f->compact_at = 2 * (k - f->fhead) + 4096;
}

/* ---- the spill: time order without holding the file (FEED_MODE_SAMPLES) ------------------
 * script and folded hand samples on in time order, so one sample waiting for its stack (a task
 * that stays in the kernel to the end of the trace) holds every later sample in the FIFO: the
 * whole file. Past SPILL_AT waiting behind it, the FIFO's settled head (older than every open
 * event: nothing will be inserted before it) goes to an unlinked temporary file, a fixed-size
 * entry each, the kernel and user tuples by their index in sp_objs; a sample still pending
 * stays in memory (sp_pend) with a marker in its place. drain() hands the file on first, in
 * the same order, then the FIFO: the same samples in the same order, memory flat.
 * SPILL_AT (16384 samples, ~3 MB) is engine.py's, passed to Feed(). */
typedef struct SpEnt {
    I128 tid, pid, cookie;
    uint64_t time;
    int32_t cpu, type, outcome, kernel, user;   /* user -1: None */
    uint8_t pending, after, has_cookie, pad;
} SpEnt;

static int sp_obj(Feed *f, PyObject *o, int32_t *idx) {
    if (!o) {
        *idx = -1;
        return 0;
    }
    PyObject *k = PyLong_FromVoidPtr(o);
    if (!k)
        return -1;
    PyObject *i = PyDict_GetItemWithError(f->sp_ids, k);
    if (i) {
        *idx = (int32_t)PyLong_AsLong(i);
        Py_DECREF(k);
        return 0;
    }
    Py_ssize_t n = PyList_GET_SIZE(f->sp_objs);
    PyObject *v = PyErr_Occurred() ? NULL : PyLong_FromSsize_t(n);
    int r = v && PyDict_SetItem(f->sp_ids, k, v) == 0 && PyList_Append(f->sp_objs, o) == 0 ? 0 : -1;
    Py_XDECREF(v);
    Py_DECREF(k);
    *idx = (int32_t)n;
    return r;
}

/* the file cannot be had or written (no room in TMPDIR): keep waiting samples in memory, as
 * the Python feed does, rather than fail */
static int spill_off(Feed *f, size_t np) {
    f->sp_np = np;
    f->sp_off = 1;
    return 0;
}

static int spill(Feed *f) {
    if (f->sp_off)
        return 0;
    uint64_t oldest = 0;
    int any = pend_oldest(f, NULL, &oldest);
    size_t k = f->fhead, np = f->sp_np;
    while (k < f->flen && !(any && oldest < f->fifo[k]->sc.time))
        k++;
    if (k == f->fhead)
        return 0;
    if (!f->sp) {
        if (!(f->sp = tmpfile()))
            return spill_off(f, np);
        f->sp_objs = PyList_New(0);
        f->sp_ids = PyDict_New();
        f->sp_cur = PyMem_Malloc(sizeof(SpEnt));
        if (!f->sp_objs || !f->sp_ids || !f->sp_cur)
            return PyErr_NoMemory(), -1;
    }
    if (fseeko(f->sp, (off_t)f->sp_w, SEEK_SET) != 0)
        return spill_off(f, np);
    for (size_t i = f->fhead; i < k; i++) {
        Smp *s = f->fifo[i];
        SpEnt e;
        memset(&e, 0, sizeof e);
        if (s->sc.outcome == SC_PENDING) {
            if (grow((void **)&f->sp_pend, &f->sp_pcap, f->sp_np + 1, sizeof(Smp *)) < 0)
                return -1;
            f->sp_pend[f->sp_np++] = s;
            e.pending = 1;
        } else {
            e.tid = s->sc.tid;
            e.pid = s->pid;
            e.cookie = s->sc.cookie;
            e.has_cookie = (uint8_t)s->sc.has_cookie;
            e.time = s->sc.time;
            e.cpu = s->cpu;
            e.type = s->type;
            e.outcome = s->sc.outcome;
            e.after = (uint8_t)s->sc.after_stack;
            if (sp_obj(f, s->kernel, &e.kernel) < 0 || sp_obj(f, s->user, &e.user) < 0)
                return -1;
        }
        if (fwrite(&e, sizeof e, 1, f->sp) != 1)
            return spill_off(f, np);    /* sp_w unmoved: what this call wrote is not read */
    }
    if (fflush(f->sp) != 0)
        return spill_off(f, np);
    f->sp_w += (long long)((k - f->fhead) * sizeof(SpEnt));
    for (size_t i = f->fhead; i < k; i++) {     /* written: the FIFO lets them go */
        if (f->fifo[i]->sc.outcome != SC_PENDING)
            smp_free(f->fifo[i]);
        f->fifo[i] = NULL;
    }
    memmove(f->fifo, f->fifo + k, (f->flen - k) * sizeof(Smp *));
    f->flen -= k;
    f->fhead = 0;
    return 0;
}

/* hand on what the file holds, in order: 1 when it is all handed on, 0 when a sample still
 * waits, -1 */
static int sp_drain(Feed *f) {
    while (f->sp_have || f->sp_r < f->sp_w) {
        SpEnt *e = f->sp_cur;
        if (!f->sp_have) {
            if (fseeko(f->sp, (off_t)f->sp_r, SEEK_SET) != 0 || fread(e, sizeof *e, 1, f->sp) != 1)
                return PyErr_SetFromErrno(PyExc_OSError), -1;
            f->sp_r += sizeof *e;
            f->sp_have = 1;
        }
        PyObject *t;
        if (e->pending) {
            Smp *s = f->sp_pend[f->sp_phead];
            if (s->sc.outcome == SC_PENDING)
                return 0;
            t = sample_tuple(s);
            smp_free(s);
            f->sp_pend[f->sp_phead++] = NULL;
        } else {
            PyObject *kern = PyList_GET_ITEM(f->sp_objs, e->kernel);
            PyObject *user = e->user < 0 ? Py_None : PyList_GET_ITEM(f->sp_objs, e->user);
            t = Py_BuildValue("(NNiKiOOiON)", num(e->tid), num(e->pid), e->cpu,
                              (unsigned long long)e->time, e->type, kern, user, e->outcome,
                              e->after ? Py_True : Py_False,
                              e->has_cookie ? num(e->cookie) : (Py_INCREF(Py_None), Py_None));
        }
        f->sp_have = 0;
        if (batch_add(f, t) < 0)
            return -1;
    }
    f->sp_w = f->sp_r = 0;              /* all handed on: the file and the tables start over */
    f->sp_np = f->sp_phead = 0;
    if (PyList_SetSlice(f->sp_objs, 0, PyList_GET_SIZE(f->sp_objs), NULL) < 0)
        return -1;
    PyDict_Clear(f->sp_ids);
    return 1;
}

static int drain(Feed *f) {                         /* FtraceFeed._drain */
    if (f->mode != FEED_MODE_SAMPLES && f->flen - f->fhead > f->compact_at)
        compact(f);
    if (f->sp && (f->sp_have || f->sp_r < f->sp_w)) {
        int r = sp_drain(f);
        if (r <= 0)
            return r < 0 ? -1 : f->flen - f->fhead > (size_t)f->spill_at ? spill(f) : 0;
    }
    size_t i = f->fhead;
    if (i >= f->flen || f->fifo[i]->sc.outcome == SC_PENDING)
        return f->mode == FEED_MODE_SAMPLES && f->flen - f->fhead > (size_t)f->spill_at ? spill(f) : 0;
    uint64_t oldest = 0;
    int any = pend_oldest(f, NULL, &oldest);
    while (i < f->flen) {
        Smp *s = f->fifo[i];
        if (s->sc.outcome == SC_PENDING || (any && oldest < s->sc.time))
            break;
        if (f->mode == FEED_MODE_SAMPLES && batch_add(f, sample_tuple(s)) < 0) {
            f->fhead = i;
            return -1;
        }
        smp_free(s);                    /* resolved: the rules hold it no more */
        f->fifo[i] = NULL;
        i++;
    }
    if (i > 4096 && i * 2 > f->flen) {
        memmove(f->fifo, f->fifo + i, (f->flen - i) * sizeof(Smp *));
        f->flen -= i;
        i = 0;
    }
    f->fhead = i;
    return 0;
}

static int fifo_insert(Feed *f, Smp *s) {           /* bisect.insort(fifo, (time, seq), lo=head) */
    if (grow((void **)&f->fifo, &f->fcap, f->flen + 1, sizeof(Smp *)) < 0)
        return -1;
    size_t a = f->fhead, b = f->flen;
    while (a < b) {
        size_t mid = (a + b) / 2;
        Smp *m = f->fifo[mid];
        if (s->sc.time < m->sc.time || (s->sc.time == m->sc.time && s->seq < m->seq))
            b = mid;
        else
            a = mid + 1;
    }
    memmove(f->fifo + a + 1, f->fifo + a, (f->flen - a) * sizeof(Smp *));
    f->fifo[a] = s;
    f->flen++;
    return 0;
}

static int entry_note(Task *t, Smp *s) {            /* FtraceFeed._entry */
    if (t->nent && t->ent[t->nent - 1].cookie == s->sc.cookie) {
        if (s->sc.time < t->ent[t->nent - 1].first)
            t->ent[t->nent - 1].first = s->sc.time;
        return 0;
    }
    t->ent[t->nent++] = (Entry){s->sc.cookie, s->sc.time};
    if (t->nent > MAX_ENTRIES) {
        memmove(t->ent, t->ent + 1, (t->nent - 1) * sizeof(Entry));
        t->nent--;
    }
    return 0;
}

static void pend_clear(Pend *p) {
    Py_CLEAR(p->kernel);
    Py_CLEAR(p->ustack);
    Py_CLEAR(p->rec);
}

/* FtraceFeed._close: open event k of CPU c has its companions: a Sample */
static int close_pend(Feed *f, Buf *b, CpuSt *c, int k) {
    Pend p = c->open[k];
    memmove(c->open + k, c->open + k + 1, (c->n - k - 1) * sizeof(Pend));
    c->n--;
    Smp *s = PyMem_Calloc(1, sizeof(Smp));
    if (!s) {
        pend_clear(&p);
        return PyErr_NoMemory(), -1;
    }
    s->sc.tid = p.pid;
    s->pid = p.has_tgid ? p.tgid : p.pid;
    s->cpu = c->id;
    s->sc.time = p.ts;
    s->sc.has_time = 1;
    s->type = p.type;
    s->kernel = p.kernel ? p.kernel : PyTuple_New(0);
    p.kernel = NULL;
    s->sc.has_cookie = p.has_cookie;
    s->sc.cookie = p.cookie;
    s->sc.outcome = SC_PENDING;
    if (p.ustack && !p.has_cookie) {
        s->user = p.ustack;
        p.ustack = NULL;
    }
    if (!s->kernel) {
        pend_clear(&p);
        smp_free(s);
        return -1;
    }
    if (s->sc.has_cookie) {
        Task *t = task(b, s->sc.tid);
        if (!t) {
            pend_clear(&p);
            smp_free(s);
            return -1;
        }
        entry_note(t, s);
    }
    s->seq = ++f->seq;
    if (fifo_insert(f, s) < 0) {
        pend_clear(&p);
        smp_free(s);
        return -1;
    }
    int r = sc_sample(&b->sc, &s->sc);
    if (r == 0 && (p.role == R_EXIT || p.role == R_FORK)) {
        I128 v = p.exit;
        int has = p.has_exit;
        if (p.rec) {                    /* Python reads the field (engine.SLOW) */
            PyObject *o = slow(f, p.role == R_EXIT ? S_EXIT : S_FORK, p.rec);
            if (!o)
                r = -1;
            else {
                has = o != Py_None;
                if (has && to_num(o, &v) < 0)
                    r = -1;
                Py_DECREF(o);
            }
        }
        if (r == 0 && p.role == R_EXIT)
            r = sc_exit(&b->sc, v, p.ts);
        else if (r == 0 && has) {
            r = sc_reuse(&b->sc, v);
            Task *t = r == 0 ? map_get(&b->tasks, v) : NULL;
            if (t)
                t->nent = 0;            /* entries.pop(child) */
        }
    }
    pend_clear(&p);
    if (r < 0)
        return -1;
    return drain(f);
}

static int close_cpu(Feed *f, Buf *b, CpuSt *c) {
    while (c->n)
        if (close_pend(f, b, c, 0) < 0)
            return -1;
    return 0;
}

/* the open CPUs (of buffer only, or of all: only NULL) in the order of the Python feed's `open`
 * dict: [(buffer, CPU)] in *out */
typedef struct { Buf *b; CpuSt *c; } Open;

static int open_order(Feed *f, Buf *only, Open *out) {
    int n = 0;
    for (int j = 0; j < f->nbuf; j++) {
        Buf *b = &f->bufs[j];
        if (only && b != only)
            continue;
        for (int i = 0; i < b->nst; i++)
            if (b->st[i].n)
                out[n++] = (Open){b, &b->st[i]};
    }
    for (int a = 1; a < n; a++)
        for (int k = a; k > 0 && out[k].c->ostamp < out[k - 1].c->ostamp; k--) {
            Open x = out[k];
            out[k] = out[k - 1];
            out[k - 1] = x;
        }
    return n;
}

static int nopen_max(Feed *f) {
    int n = 0;
    for (int j = 0; j < f->nbuf; j++)
        n += f->bufs[j].nst;
    return n > 0 ? n : 1;
}

static int flush_pid(Feed *f, Buf *b, I128 pid) {
    Open *idx = PyMem_Malloc(nopen_max(f) * sizeof(Open));
    if (!idx)
        return PyErr_NoMemory(), -1;
    int n = open_order(f, b, idx);
    for (int i = 0; i < n; i++) {
        CpuSt *c = idx[i].c;
        for (int k = 0; k < c->n;) {
            if (c->open[k].pid == pid) {
                if (close_pend(f, b, c, k) < 0) {
                    PyMem_Free(idx);
                    return -1;
                }
            } else {
                k++;
            }
        }
    }
    PyMem_Free(idx);
    return 0;
}

static void prune(Feed *f, Buf *b) {               /* FtraceFeed._prune */
    uint64_t lo = 0;
    int any = pend_oldest(f, b, &lo);
    for (size_t j = 0; j < b->tasks.cap; j++) {
        if (!b->tasks.s[j].used)
            continue;
        Task *t = b->tasks.s[j].val;
        for (ScSamp *s = t->sc.phead; s; s = s->tnext)
            if (!any || s->time < lo)
                lo = s->time, any = 1;
        if (t->nent && (!any || t->ent[t->nent - 1].first < lo))
            lo = t->ent[t->nent - 1].first, any = 1;
    }
    size_t from = b->nwin;
    if (any) {
        size_t a = 0, z = b->nwin;
        while (a < z) {
            size_t mid = (a + z) / 2;
            if (b->win[mid].b < lo)
                a = mid + 1;
            else
                z = mid;
        }
        from = a;
    }
    memmove(b->win, b->win + from, (b->nwin - from) * sizeof(Window));
    b->nwin -= from;
    b->prune_at = 2 * b->nwin + 1024;
}

/* ---- one record ------------------------------------------------------------------------------ */
static PyObject *rec_obj(Feed *f, void *rv) {
    Rec *r = rv;
    if (!r->obj)
        r->obj = Py_BuildValue("(KiLiiLy#)", (unsigned long long)r->ts, r->cpu, r->missed,
                               r->type, r->pid, (long long)r->off, r->d, (Py_ssize_t)r->len);
    Py_XINCREF(r->obj);
    return r->obj;
}

static PyObject *slow_rec(Feed *f, int kind, Rec *r) {
    PyObject *o = rec_obj(f, r);
    if (!o)
        return NULL;
    PyObject *v = slow(f, kind, o);
    Py_DECREF(o);
    return v;
}

/* FtraceFeed._owner: the newest open event of pid lacking this companion, or -1 */
static int owner(CpuSt *c, int pid, int role) {
    for (int k = c->n - 1; k >= 0; k--) {
        Pend *p = &c->open[k];
        if (p->pid == pid && (role == R_KERNEL ? !p->kernel : (!p->has_cookie && !p->ustack)))
            return k;
    }
    return -1;
}

/* numbers read into a C array (a slow() list too); *n < 0: absent (None) */
static int numbers(Feed *f, const Spec *s, Rec *r, int kind, I128 **out, int64_t *n) {
    int64_t st;
    int a = array(f, s, r->d, r->len, &st, n);
    if (a == 0) {
        *n = -1;
        return 0;
    }
    if (a == 1) {
        *out = PyMem_Malloc((*n ? *n : 1) * sizeof(I128));
        if (!*out)
            return PyErr_NoMemory(), -1;
        for (int64_t i = 0; i < *n; i++)
            (*out)[i] = elem_at(f->bufs[0].w, r->d + st + i * s->elem, s->elem, s->sign);
        return 0;
    }
    PyObject *o = slow_rec(f, kind, r);
    if (!o)
        return -1;
    if (o == Py_None) {
        Py_DECREF(o);
        *n = -1;
        return 0;
    }
    PyObject *seq = PySequence_Fast(o, "slow(): a list expected");
    Py_DECREF(o);
    if (!seq)
        return -1;
    *n = PySequence_Fast_GET_SIZE(seq);
    *out = PyMem_Malloc((*n ? *n : 1) * sizeof(I128));
    if (!*out) {
        Py_DECREF(seq);
        return PyErr_NoMemory(), -1;
    }
    for (int64_t i = 0; i < *n; i++)
        if (to_num(PySequence_Fast_GET_ITEM(seq, i), &(*out)[i]) < 0) {
            Py_DECREF(seq);
            return -1;
        }
    Py_DECREF(seq);
    return 0;
}

/* FtraceFeed._path: a frame's file from inode_cache */
static PyObject *path_of(Feed *f, int has_key, I128 key, int has_dev, I128 dev) {
    if (!has_key || key == (I128)f->no_vma) {
        Py_INCREF(f->no_file);
        return f->no_file;
    }
    if (key == 0) {
        Py_INCREF(f->anon);
        return f->anon;
    }
    PyObject *k = num(key), *d = has_dev ? num(dev) : (Py_INCREF(Py_None), Py_None);
    if (!k || !d) {
        Py_XDECREF(k);
        Py_XDECREF(d);
        return NULL;
    }
    PyObject *t = PyTuple_Pack(2, k, d);
    PyObject *p = t ? PyDict_GetItemWithError(f->paths, t) : NULL;
    Py_XDECREF(t);
    if (!p && !PyErr_Occurred()) {
        t = PyTuple_Pack(2, k, Py_None);
        p = t ? PyDict_GetItemWithError(f->paths, t) : NULL;
        Py_XDECREF(t);
    }
    if (p) {
        Py_INCREF(p);
    } else if (!PyErr_Occurred()) {
        f->anom[A_NO_INODE]++;
        p = f->unknown_path ? PyObject_CallFunctionObjArgs(f->unknown_path, k, d, NULL)
                            : (PyErr_SetString(PyExc_RuntimeError, "Feed: cleared"), NULL);
    }
    Py_DECREF(k);
    Py_DECREF(d);
    return p;
}

static int unwind_stack(Feed *f, Buf *b, const TypeInfo *ti, Rec *r) {   /* FtraceFeed._unwind_stack */
    I128 pid = r->pid, cookie = 0;
    if (flush_pid(f, b, pid) < 0)
        return -1;
    I128 *stack = NULL, *keys = NULL, *devs = NULL;
    int64_t ns, nk = -1, nd;
    PyObject *frames = NULL;
    int ret = -1;
    if (numbers(f, &ti->f[1], r, S_STACK, &stack, &ns) < 0)
        goto out;
    if (ns < 0)
        ns = 0;
    if (numbers(f, &ti->f[2], r, S_KEYS, &keys, &nk) < 0)   /* inodes, hashes or hash */
        goto out;
    if (numbers(f, &ti->f[3], r, S_DEVS, &devs, &nd) < 0)
        goto out;
    frames = PyTuple_New(ns);
    if (!frames)
        goto out;
    for (int64_t i = 0; i < ns; i++) {
        PyObject *path = path_of(f, keys && i < nk, keys && i < nk ? keys[i] : 0,
                                 devs && i < nd, devs && i < nd ? devs[i] : 0);
        PyObject *off = path ? num(stack[i]) : NULL;
        PyObject *fr = off ? PyTuple_Pack(2, path, off) : NULL;
        Py_XDECREF(path);
        Py_XDECREF(off);
        if (!fr)
            goto out;
        PyTuple_SET_ITEM(frames, i, fr);
    }
    /* one tuple for equal frames (each made and named above as before, so the counts are the
     * same): a sample waiting in the FIFO refers to it instead of holding its own ~1 KB of
     * pairs; at most UC_MAX kept, then started over */
    if (!f->ucache && !(f->ucache = PyDict_New()))
        goto out;
    if (PyDict_GET_SIZE(f->ucache) >= UC_MAX)
        PyDict_Clear(f->ucache);
    PyObject *same = PyDict_SetDefault(f->ucache, frames, frames);
    if (!same)
        goto out;
    Py_INCREF(same);
    Py_SETREF(frames, same);
    int got = scalar(f, &ti->f[0], r->d, r->len, &cookie);
    if (got != 1) {
        PyObject *o = slow_rec(f, S_COOKIE, r);
        if (!o || to_num(o, &cookie) < 0) {
            Py_XDECREF(o);
            goto out;
        }
        Py_DECREF(o);
    }
    Stk *st = PyMem_Calloc(1, sizeof(Stk));
    if (!st) {
        PyErr_NoMemory();
        goto out;
    }
    st->sc.cookie = cookie;
    st->sc.time = r->ts;
    st->sc.has_time = 1;
    Py_INCREF(frames);
    st->frames = frames;
    if (sc_deferred(&b->sc, pid, &st->sc, 0) < 0)
        goto out;
    Task *t = map_get(&b->tasks, pid);
    if (t && t->nent) {                 /* the entries before this stack's are over */
        int i = 0;
        while (i < t->nent && t->ent[i].cookie != cookie)
            i++;
        if (i > 0 && i < t->nent) {
            memmove(t->ent, t->ent + i, (t->nent - i) * sizeof(Entry));
            t->nent -= i;
        }
    }
    ret = drain(f);
out:
    PyMem_Free(stack);
    PyMem_Free(keys);
    PyMem_Free(devs);
    Py_XDECREF(frames);
    return ret;
}

static int companion(Feed *f, Buf *b, const TypeInfo *ti, CpuSt *c, Rec *r) {
    int k = owner(c, r->pid, ti->role);
    if (k < 0) {
        f->anom[ti->role == R_KERNEL ? A_KS_ALONE : ti->role == R_COOKIE ? A_COOKIE_ALONE
                                                                          : A_USTACK_ALONE]++;
        return 0;
    }
    Pend *p = &c->open[k];
    if (ti->role == R_KERNEL) {
        PyObject *kf = kernel_frames(f, ti, r->d, r->len, rec_obj, r);
        if (!kf)
            return -1;
        p->kernel = kf;
        return 0;
    }
    if (ti->role == R_COOKIE) {
        I128 v;
        if (scalar(f, &ti->f[0], r->d, r->len, &v) != 1) {
            PyObject *o = slow_rec(f, S_COOKIE, r);
            if (!o || to_num(o, &v) < 0) {
                Py_XDECREF(o);
                return -1;
            }
            Py_DECREF(o);
        }
        p->cookie = v;
        p->has_cookie = 1;
    } else {
        const Spec *cs = &ti->f[0];
        int64_t st, n;
        int a = array(f, cs, r->d, r->len, &st, &n);
        PyObject *us = a == 1 ? trimmed(f, r->d + st, n, cs->elem, cs->sign, 1)
                     : a == 0 ? PyTuple_New(0) : slow_rec(f, S_UCALLERS, r);
        if (!us)
            return -1;
        p->ustack = us;
        I128 v;
        int g = scalar(f, &ti->f[1], r->d, r->len, &v);
        if (g < 0) {
            PyObject *o = slow_rec(f, S_TGID, r);
            if (!o)
                return -1;
            g = o != Py_None;
            if (g && to_num(o, &v) < 0) {
                Py_DECREF(o);
                return -1;
            }
            Py_DECREF(o);
        }
        p->has_tgid = g;
        p->tgid = v;
    }
    return close_pend(f, b, c, k);
}

/* FtraceFeed._inode: paths[(inode or hash, dev or None)] = path; Python's where C cannot read */
static int inode(Feed *f, const TypeInfo *ti, Rec *r) {
    I128 ino = 0, hash = 0, dev = 0;
    int gh = scalar(f, &ti->f[1], r->d, r->len, &hash);    /* number("hash", None) first */
    int gi = gh < 0 ? -1 : scalar(f, &ti->f[0], r->d, r->len, &ino);
    int gd = gi < 0 ? -1 : scalar(f, &ti->f[2], r->d, r->len, &dev);
    PyObject *path = gd < 0 ? NULL : text(f, &ti->f[3], r->d, r->len);
    if (!path) {
        if (PyErr_Occurred())
            return -1;
        PyObject *o = slow_rec(f, S_INODE, r);
        Py_XDECREF(o);
        return o ? 0 : -1;
    }
    if (path == Py_None) {
        Py_DECREF(path);
        path = PyUnicode_FromString("");
        if (!path)
            return -1;
    }
    if (!gi && !gh) {
        Py_DECREF(path);
        f->anom[A_NO_KEY]++;
        return 0;
    }
    PyObject *k = num(gi ? ino : hash), *dv = gd ? num(dev) : (Py_INCREF(Py_None), Py_None);
    PyObject *t = k && dv ? PyTuple_Pack(2, k, dv) : NULL;
    int ret = t ? PyDict_SetItem(f->paths, t, path) : -1;
    Py_XDECREF(k);
    Py_XDECREF(dv);
    Py_XDECREF(t);
    Py_DECREF(path);
    return ret;
}

static int event(Feed *f, Buf *b, Rec *r) {                        /* FtraceFeed.event */
    const TypeInfo *ti = r->type >= 0 && r->type < f->ntypes && f->types[r->type].role >= 0
                         ? &f->types[r->type] : NULL;
    if (ti)
        f->counts[r->type]++;
    else {
        f->counts_none++;
        f->anom[A_NOTYPE]++;
    }
    CpuSt *c = &b->st[b->st_of[r->index]];
    int ret = 0;
    if (r->missed) {
        if (close_cpu(f, b, c) < 0)
            return -1;
        long long m = r->missed;
        sc_lost(&b->sc, m > 0 ? (unsigned long long)m : 0);
        if (grow((void **)&b->win, &b->wcap, b->nwin + 1, sizeof(Window)) < 0)
            return -1;
        b->win[b->nwin++] = (Window){r->ts, c->last, c->has_last};
        if (b->nwin > b->prune_at)
            prune(f, b);
        if (m > 0)
            b->lost_events += (unsigned long long)m;
        else
            f->anom[A_NOCOUNT]++;
    }
    c->last = r->ts;
    c->has_last = 1;
    int role = ti ? ti->role : R_PLAIN;
    if (role == R_KERNEL || role == R_COOKIE || role == R_USTACK) {
        ret = companion(f, b, ti, c, r);
    } else if (role == R_UNWIND) {
        ret = unwind_stack(f, b, ti, r);
    } else if (role == R_INODE) {
        ret = flush(f) < 0 ? -1 : inode(f, ti, r);  /* the sink names with the paths so far */
    } else {
        if (!c->n)
            c->ostamp = ++f->stamp;
        Pend *p = &c->open[c->n++];
        memset(p, 0, sizeof *p);
        p->ts = r->ts;
        p->pid = r->pid;
        p->type = r->type;
        p->role = role;
        if (role == R_EXIT || role == R_FORK) {
            int g = scalar(f, &ti->f[0], r->d, r->len, &p->exit);
            if (g < 0) {
                p->rec = rec_obj(f, r);
                if (!p->rec)
                    ret = -1;
            } else if (g == 0 && role == R_EXIT) {
                p->exit = r->pid;       /* number("pid", ev.pid) */
                p->has_exit = 1;
            } else {
                p->has_exit = g;
            }
        }
        if (ret == 0 && c->n > MAX_NEST)
            ret = close_pend(f, b, c, 0);
    }
    Py_CLEAR(r->obj);
    return ret;
}

/* ---- the Python type ------------------------------------------------------------------------- */
static int spec_of(PyObject *o, Spec *s) {
    memset(s, 0, sizeof *s);
    if (o == Py_None)
        return 0;
    if (!PyArg_ParseTuple(o, "iiiiii", &s->kind, &s->off, &s->size, &s->elem, &s->sign, &s->rel))
        return -1;
    if ((s->kind == F_SCALAR && s->size != 1 && s->size != 2 && s->size != 4 && s->size != 8) ||
        ((s->kind == F_STATIC || s->kind == F_DYNAMIC) && s->elem != 1 && s->elem != 2 &&
         s->elem != 4 && s->elem != 8) || s->off < 0 || s->size < 0) {
        PyErr_SetString(PyExc_ValueError, "Feed: a field spec C cannot read");
        return -1;
    }
    return 0;
}

/* Feed([(walker, peek ids)] a buffer each, {type id: (role, specs)}, max id, mode, sink, slow,
 *      paths, no_file, anon, unknown_path, max_pending, exit_grace[, spill_at]) */
static int feed_init(Feed *f, PyObject *args, PyObject *kw) {
    PyObject *types;
    long long max_pending, grace;
    f->spill_at = 16384;
    if (!PyArg_ParseTuple(args, "O!O!iiOOO!UUOLL|n", &PyList_Type, &f->walkers, &PyDict_Type, &types,
                          &f->ntypes, &f->mode, &f->sink, &f->slow, &PyDict_Type, &f->paths,
                          &f->no_file, &f->anon, &f->unknown_path, &max_pending, &grace,
                          &f->spill_at))
        return -1;
    if (f->spill_at < 1)
        f->spill_at = 1;
    Py_INCREF(f->walkers);
    Py_INCREF(f->sink);
    Py_INCREF(f->slow);
    Py_INCREF(f->paths);
    Py_INCREF(f->no_file);
    Py_INCREF(f->anon);
    Py_INCREF(f->unknown_path);
    f->failed = -1;
    if (grace < 0) {
        PyErr_SetString(PyExc_ValueError, "Feed: exit_grace < 0");
        return -1;
    }
    if (max_pending < 0)        /* evicts as 0 does: each sample that would wait */
        max_pending = 0;
    if (f->ntypes < 0 || f->ntypes > 1 << 20) {
        PyErr_SetString(PyExc_ValueError, "Feed: type ids");
        return -1;
    }
    f->ntypes++;
    f->types = PyMem_Calloc(f->ntypes, sizeof(TypeInfo));
    f->counts = PyMem_Calloc(f->ntypes, sizeof(uint64_t));
    if (!f->types || !f->counts)
        return PyErr_NoMemory(), -1;
    for (int i = 0; i < f->ntypes; i++)
        f->types[i].role = -1;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(types, &pos, &k, &v)) {
        long id = PyLong_AsLong(k);
        PyObject *specs;
        int role;
        if ((id == -1 && PyErr_Occurred()) || !PyArg_ParseTuple(v, "iO!", &role, &PyTuple_Type, &specs))
            return -1;
        if (id < 0 || id >= f->ntypes || PyTuple_GET_SIZE(specs) > 4) {
            PyErr_SetString(PyExc_ValueError, "Feed: a type id out of range");
            return -1;
        }
        f->types[id].role = role;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(specs); i++)
            if (spec_of(PyTuple_GET_ITEM(specs, i), &f->types[id].f[i]) < 0)
                return -1;
    }
    Py_ssize_t nb = PyList_GET_SIZE(f->walkers);
    if (nb < 1) {
        PyErr_SetString(PyExc_ValueError, "Feed: no buffer");
        return -1;
    }
    f->bufs = PyMem_Calloc(nb, sizeof(Buf));
    if (!f->bufs)
        return PyErr_NoMemory(), -1;
    f->nbuf = (int)nb;
    for (Py_ssize_t j = 0; j < nb; j++) {
        Buf *b = &f->bufs[j];
        PyObject *peek;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(f->walkers, j), "O!O!", &WalkerType, &b->w,
                              &PyList_Type, &peek))
            return -1;
        if (j == 0)
            f->no_vma = b->w->long8 ? UINT64_MAX : 0xFFFFFFFFULL;
        b->npeek = (int)PyList_GET_SIZE(peek);
        b->peek_ids = PyMem_Calloc(b->npeek ? b->npeek : 1, sizeof(int));
        int nc = b->w->ncpus;
        b->st = PyMem_Calloc(nc ? nc : 1, sizeof(CpuSt));
        b->st_of = PyMem_Calloc(nc ? nc : 1, sizeof(int));
        b->head_data = PyMem_Malloc(b->w->page_size);
        if (!b->peek_ids || !b->st || !b->st_of || !b->head_data)
            return PyErr_NoMemory(), -1;
        for (int i = 0; i < b->npeek; i++) {
            b->peek_ids[i] = (int)PyLong_AsLong(PyList_GET_ITEM(peek, i));
            if (b->peek_ids[i] == -1 && PyErr_Occurred())
                return -1;
        }
        for (int i = 0; i < nc; i++) {      /* one state per CPU number, as the feed keys them */
            int x = 0;
            while (x < b->nst && b->st[x].id != b->w->cpus[i].id)
                x++;
            if (x == b->nst)
                b->st[b->nst++].id = b->w->cpus[i].id;
            b->st_of[i] = x;
        }
        b->prune_at = 1024;
        b->f = f;
        sc_init(&b->sc, b, (uint64_t)max_pending, (uint64_t)grace);
    }
    f->first_unmatched = PyList_New(0);
    f->orphans = PyList_New(0);
    f->batch = PyList_New(0);
    f->compact_at = 4096;
    return f->first_unmatched && f->orphans && f->batch ? 0 : -1;
}

/* Take buffer b's next record as its head (copied: the walker moves on): 1, 0 at its end, -1
 * with Damaged raised (f->failed says which buffer). */
static int take_head(Feed *f, Buf *b) {
    Walker *w = b->w;
    Cpu *best;
    b->has_head = 0;
    int got = td_pick(w, &best);
    if (got < 0)
        f->failed = (int)(b - f->bufs);
    if (got <= 0)
        return got;
    const unsigned char *p = best->buf + w->start + best->rec_index;
    memcpy(b->head_data, p, best->rec_size);
    b->head = (Rec){best->id, (int)(best - w->cpus), best->rec_ts, best->rec_missed,
                    best->rec_off, b->head_data, best->rec_size, td_type(w, p), td_pid(w, p), NULL};
    best->records++;
    td_advance(w, best);            /* as walker_next: the CPU holds its next record */
    b->has_head = 1;
    return 1;
}

/* run(): every record to the end (None), or the exception (Damaged, slow()'s FormatError).
 * The buffers' records merge as heapq.merge merges bridge.Trace's buffers: a head each, taken
 * in buffer order; the earliest goes (ties: the lower buffer), then its buffer's next. */
static PyObject *feed_run(Feed *f, PyObject *unused) {
    if (f->finished) {
        PyErr_SetString(PyExc_RuntimeError, "Feed: already finished");
        return NULL;
    }
    for (int j = 0; j < f->nbuf; j++)
        if (take_head(f, &f->bufs[j]) < 0)
            return NULL;            /* finish() hands on what is batched, then the rest */
    for (;;) {
        Buf *b = NULL;
        for (int j = 0; j < f->nbuf; j++)
            if (f->bufs[j].has_head && (!b || f->bufs[j].head.ts < b->head.ts))
                b = &f->bufs[j];
        if (!b)
            break;
        Rec r = b->head;
        int ok = event(f, b, &r);
        b->has_head = 0;
        if (ok < 0 || take_head(f, b) < 0)
            return NULL;
    }
    if (flush(f) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* finish(): FtraceFeed.finish: what is open on every CPU closed, each buffer's stitcher
 * finished (in buffer order), then the last of the FIFO */
static PyObject *feed_finish(Feed *f, PyObject *unused) {
    if (f->finished)
        Py_RETURN_NONE;
    f->finished = 1;
    Open *idx = PyMem_Malloc(nopen_max(f) * sizeof(Open));
    if (!idx)
        return PyErr_NoMemory();
    int n = open_order(f, NULL, idx);
    for (int i = 0; i < n; i++)
        if (close_cpu(f, idx[i].b, idx[i].c) < 0) {
            PyMem_Free(idx);
            return NULL;
        }
    PyMem_Free(idx);
    for (int j = 0; j < f->nbuf; j++)
        if (sc_finish(&f->bufs[j].sc) < 0)
            return NULL;
    if (drain(f) < 0 || flush(f) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *u128(unsigned __int128 v) {
    PyObject *hi = PyLong_FromUnsignedLongLong((unsigned long long)(v >> 64));
    PyObject *sh = PyLong_FromLong(64);
    PyObject *big = hi && sh ? PyNumber_Lshift(hi, sh) : NULL;
    PyObject *lo = big ? PyLong_FromUnsignedLongLong((unsigned long long)v) : NULL;
    PyObject *sum = lo ? PyNumber_Add(big, lo) : NULL;
    Py_XDECREF(hi);
    Py_XDECREF(sh);
    Py_XDECREF(big);
    Py_XDECREF(lo);
    return sum;
}

static PyObject *keys(const uint64_t *v) {
    PyObject *l = PyList_New(NKEYS);
    for (int i = 0; l && i < NKEYS; i++)
        PyList_SET_ITEM(l, i, PyLong_FromUnsignedLongLong(v[i]));
    return l;
}

/* counts(): what the report needs, for engine.py to fill a StitchReport */
static PyObject *feed_counts(Feed *f, PyObject *unused) {
    PyObject *cells = PyList_New(f->ncells), *types = PyDict_New(), *anom = PyList_New(NANOM),
             *bufs = PyList_New(f->nbuf);
    if (!cells || !types || !anom || !bufs)
        goto fail;
    for (int i = 0; i < NANOM; i++)
        PyList_SET_ITEM(anom, i, PyLong_FromUnsignedLongLong(f->anom[i]));
    for (size_t i = 0; i < f->ncells; i++)
        PyList_SET_ITEM(cells, i, Py_BuildValue("(NiiL)", num(f->cells[i].tid), f->cells[i].cpu,
                                                f->cells[i].key, f->cells[i].n));
    for (int i = 0; i < f->ntypes; i++)
        if (f->counts[i]) {
            PyObject *k = PyLong_FromLong(i), *v = PyLong_FromUnsignedLongLong(f->counts[i]);
            if (!k || !v || PyDict_SetItem(types, k, v) < 0) {
                Py_XDECREF(k);
                Py_XDECREF(v);
                goto fail;
            }
            Py_DECREF(k);
            Py_DECREF(v);
        }
    ScStitcher all;                     /* the feed's: the buffers' counts summed */
    memset(&all, 0, sizeof all);
    for (int j = 0; j < f->nbuf; j++) {
        Buf *b = &f->bufs[j];
        ScStitcher *x = &b->sc;
        PyObject *d = Py_BuildValue("{sKsKsKsKsNsKsKsN}", "samples", x->samples, "stitched",
                                    x->stitched, "stitched_after_stack", x->after_stack, "passed",
                                    x->passed, "unmatched", keys(x->unmatched), "deferred_records",
                                    x->deferred_records, "lost_records", x->lost_records,
                                    "lost_events", u128(b->lost_events));
        if (!d)
            goto fail;
        PyList_SET_ITEM(bufs, j, d);
        all.samples += x->samples;
        all.stitched += x->stitched;
        all.after_stack += x->after_stack;
        all.passed += x->passed;
        for (int k = 0; k < NKEYS; k++)
            all.unmatched[k] += x->unmatched[k];
        all.deferred_records += x->deferred_records;
        all.duplicates += x->duplicates;
        all.orphans += x->orphans;
        all.lost_records += x->lost_records;
        sc_add_sat(&all.lost_events, x->lost_events);
        if (x->max_pending_seen > all.max_pending_seen)
            all.max_pending_seen = x->max_pending_seen;
    }
    return Py_BuildValue(
        "{sKsKsKsKsNsKsKsKsKsKsKsOsOsNsNsKsNsN}", "samples", all.samples, "stitched", all.stitched,
        "stitched_after_stack", all.after_stack, "passed", all.passed, "unmatched",
        keys(all.unmatched), "deferred_records", all.deferred_records, "duplicate_deferred",
        all.duplicates, "orphan_deferred", all.orphans, "lost_records", all.lost_records,
        "lost_events", all.lost_events, "max_pending", all.max_pending_seen,
        "first_unmatched", f->first_unmatched, "orphans", f->orphans, "cells", cells,
        "types", types, "untyped", f->counts_none, "anomalies", anom, "buffers", bufs);
fail:
    Py_XDECREF(cells);
    Py_XDECREF(types);
    Py_XDECREF(anom);
    Py_XDECREF(bufs);
    return NULL;
}

static PyObject *feed_failed(Feed *f, void *unused) {
    return PyLong_FromLong(f->failed);
}

static PyGetSetDef feed_getset[] = {
    {"failed", (getter)feed_failed, NULL, "the buffer whose damage was raised, or -1", NULL},
    {NULL}
};

/* the Python objects a Feed holds: its sink and slow() are bound methods of the EngineFeed that
 * holds it, a cycle the collector must see */
static int feed_traverse(Feed *f, visitproc visit, void *arg) {
    Py_VISIT(f->walkers);
    Py_VISIT(f->sink);
    Py_VISIT(f->slow);
    Py_VISIT(f->paths);
    Py_VISIT(f->unknown_path);
    Py_VISIT(f->first_unmatched);
    Py_VISIT(f->orphans);
    Py_VISIT(f->batch);
    Py_VISIT(f->last_frames);
    Py_VISIT(f->ucache);
    Py_VISIT(f->sp_objs);
    return 0;
}

static int feed_clear(Feed *f) {
    Py_CLEAR(f->sink);
    Py_CLEAR(f->slow);
    Py_CLEAR(f->unknown_path);
    return 0;
}

static void feed_dealloc(Feed *f) {
    PyObject_GC_UnTrack(f);
    for (int j = 0; j < f->nbuf; j++) {
        Buf *b = &f->bufs[j];
        for (int i = 0; i < b->nst; i++)
            for (int k = 0; k < b->st[i].n; k++)
                pend_clear(&b->st[i].open[k]);
    }
    for (size_t i = f->fhead; i < f->flen; i++)
        if (f->fifo[i])                     /* pending samples too: each is in the FIFO */
            smp_free(f->fifo[i]);
    for (size_t i = f->sp_phead; i < f->sp_np; i++)
        if (f->sp_pend[i])                  /* or spilled, waiting */
            smp_free(f->sp_pend[i]);
    PyMem_Free(f->sp_pend);
    PyMem_Free(f->sp_cur);
    if (f->sp)
        fclose(f->sp);
    Py_XDECREF(f->sp_objs);
    Py_XDECREF(f->sp_ids);
    for (int j = 0; j < f->nbuf; j++) {
        Buf *b = &f->bufs[j];
        for (size_t x = 0; x < b->tasks.cap; x++)
            if (b->tasks.s[x].used) {       /* its pending samples are in the FIFO, freed there */
                Task *t = b->tasks.s[x].val;
                stk_free((Stk *)t->sc.stack);
                PyMem_Free(t);
            }
        PyMem_Free(b->tasks.s);
        sc_free(&b->sc);
        PyMem_Free(b->win);
        PyMem_Free(b->st);
        PyMem_Free(b->st_of);
        PyMem_Free(b->peek_ids);
        PyMem_Free(b->head_data);
        Py_XDECREF(b->head.obj);
    }
    PyMem_Free(f->bufs);
    PyMem_Free(f->cellmap.s);
    PyMem_Free(f->cells);
    PyMem_Free(f->fifo);
    kc_clear(f);
    PyMem_Free(f->kc);
    PyMem_Free(f->types);
    PyMem_Free(f->counts);
    Py_XDECREF(f->walkers);
    Py_XDECREF(f->sink);
    Py_XDECREF(f->slow);
    Py_XDECREF(f->paths);
    Py_XDECREF(f->no_file);
    Py_XDECREF(f->anon);
    Py_XDECREF(f->unknown_path);
    Py_XDECREF(f->first_unmatched);
    Py_XDECREF(f->orphans);
    Py_XDECREF(f->batch);
    Py_XDECREF(f->last_frames);
    Py_XDECREF(f->ucache);
    Py_TYPE(f)->tp_free((PyObject *)f);
}

static PyMethodDef feed_methods[] = {
    {"run", (PyCFunction)feed_run, METH_NOARGS, "every record to the end"},
    {"finish", (PyCFunction)feed_finish, METH_NOARGS, "close what is open, resolve the rest"},
    {"counts", (PyCFunction)feed_counts, METH_NOARGS, "the report's counts"},
    {NULL}
};

static PyTypeObject FeedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "deferstitch._tracedat.Feed",
    .tp_basicsize = sizeof(Feed),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "reader.FtraceFeed and the stitcher's cookie rules over a Walker, in C.",
    .tp_traverse = (traverseproc)feed_traverse,
    .tp_clear = (inquiry)feed_clear,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)feed_init,
    .tp_dealloc = (destructor)feed_dealloc,
    .tp_methods = feed_methods,
    .tp_getset = feed_getset,
};

PyObject *td_feed_type(void) {
    return PyType_Ready(&FeedType) < 0 ? NULL : (PyObject *)&FeedType;
}
