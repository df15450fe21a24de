/* The cookie rules of stitcher.py, written once in C: both C feeds, the perf.data engine
 * (_accel.c) and the trace.dat feed (_tracefeed.c), include this file and drive one
 * ScStitcher per stream of samples with the calls stitcher.py's Stitcher takes:
 *
 *     sc_sample(st, s)            a sample (a deferred one waits, or meets its stack)
 *     sc_reject(st, s, reason)    a sample that cannot even wait (perf.data: no tid or time)
 *     sc_deferred(st, tid, k, n)  the stack of tid's latest kernel entry
 *     sc_exit(st, tid, time)      EXIT: a grace period starts; sc_reuse(st, tid): FORK of tid
 *     sc_lost(st, events)         a LOST record; sc_evict_oldest(st): the memory bound
 *     sc_finish(st)               end of input: the exited, what waits, the stacks left
 *
 * stitcher.py stays the definition (its docstring draws the rules); tests/test_accel.py and
 * tests/test_tracecmd_engine.py hold both C feeds to the Python path's bytes and reports.
 * Matching by task order (stacks without a cookie) is the Python stitcher's alone: neither C
 * feed takes such files (perfdata/engine.py unavailable(); ftrace has no such layout).
 *
 * The rules see a sample, a stack and a task as ScSamp, ScStack and ScTask; a feed's own types
 * begin with them (member ``sc``), so a pointer to one is a pointer to the other, as a
 * PyObject * is to an object's struct. The feed keeps its tasks (a map: tid -> task) and says
 * what a stack's frames are; the rules keep what waits, in stitcher.py's orders. Before the
 * #include the feed defines:
 *
 *     SC_TID, SC_COOKIE   the integer types of a task id and a cookie
 *     SC_CTX              its type (declared), handed back to each callback
 *
 * and afterwards these callbacks (static; declared below):
 *
 *     sc_task_get(x, tid)        the task, or NULL          sc_task_new(x, tid): a zeroed one, kept
 *     sc_task_idle(x, t)         nothing waits, no stack: the feed may free t
 *     sc_stack_drop(x, k)        the rules let go of stack k
 *     sc_attach(x, s, k)         s is stitched with k: it takes k's frames
 *     sc_emit(x, s)              s's outcome is final (and counted): the feed's report and output
 *     sc_orphan(x, tid, k)       k served no sample (counted): the feed lists it
 *     sc_lost_reason(x, t, s, time, reason)   why pending s never gets its stack, now that a
 *                                stack of a later entry came at time: stitcher.lost_reason's
 *                                ``reason``, or the feed's narrower one (tracecmd/reader.py)
 *
 * Errors: a function returns -1 with a Python exception set (a callback's, or MemoryError).
 */
#ifndef DEFERSTITCH_STITCHCORE_H
#define DEFERSTITCH_STITCHCORE_H
#include "_twin.h"
#include <stdint.h>
#include <string.h>

#if !defined(SC_TID) || !defined(SC_COOKIE) || !defined(SC_CTX)
#error "define SC_TID, SC_COOKIE and SC_CTX before including _stitchcore.h"
#endif

#define SC_PENDING (-1)             /* a sample's outcome while it waits */

typedef struct ScStack {            /* stitcher._Stack: the user stack of one kernel entry */
    SC_COOKIE cookie;
    uint64_t time, served;          /* served: samples stitched with it (none: an orphan) */
    int has_time;
} ScStack;

typedef struct ScSamp {             /* model.Sample, what the rules read and fill */
    SC_TID tid;
    SC_COOKIE cookie;
    uint64_t time, lost_seq;        /* lost_seq: the stitcher's when the sample began to wait */
    int has_time, has_cookie, outcome, after_stack;    /* outcome: a K_ key, or SC_PENDING */
    int unchosen;                   /* the selection left it out: stitched, neither counted nor output */
    struct ScSamp *tnext;           /* its task's queue, oldest first */
    struct ScSamp *oprev, *onext;   /* every pending sample, oldest first (eviction) */
} ScSamp;

typedef struct ScTask {
    SC_TID tid;
    ScSamp *phead, *ptail;          /* stitcher.pending[tid] */
    uint64_t npend;
    ScStack *stack;                 /* stitcher.stacks[tid] */
    struct ScTask *pprev, *pnext;   /* tasks with pending samples: stitcher.pending's order */
    struct ScTask *sprev, *snext;   /* tasks with a stack: stitcher.stacks' order */
} ScTask;

typedef struct { uint64_t time; SC_TID tid; } ScExited;

typedef struct {
    SC_CTX *x;                      /* the feed, for its callbacks */
    uint64_t max_pending, exit_grace;
    ScTask *p_first, *p_last, *s_first, *s_last;
    ScSamp *o_first, *o_last;
    uint64_t npending, lost_seq;
    ScExited *ex;                   /* stitcher.exited: tasks in their grace period, a ring */
    size_t exhead, exlen, excap;
    /* report.py's counts that the rules keep (the feeds add their own) */
    uint64_t samples, not_chosen, stitched, after_stack, passed, unmatched[NKEYS], deferred_records,
             duplicates, orphans, dropped_frames, lost_records, lost_events, max_pending_seen;
    /* the files of one recording read in turn (perfdata/recording.py Sequence): each file's
     * latest record time but the last file's, and the samples stitched across one of them */
    uint64_t *bounds, nbounds, across;
} ScStitcher;

static ScTask *sc_task_get(SC_CTX *x, SC_TID tid);
static ScTask *sc_task_new(SC_CTX *x, SC_TID tid);
static void sc_task_idle(SC_CTX *x, ScTask *t);
static void sc_stack_drop(SC_CTX *x, ScStack *k);
static void sc_attach(SC_CTX *x, ScSamp *s, ScStack *k);
static int sc_emit(SC_CTX *x, ScSamp *s);
static int sc_orphan(SC_CTX *x, SC_TID tid, ScStack *k);
static int sc_lost_reason(SC_CTX *x, ScTask *t, ScSamp *s, uint64_t time, int reason);

static void sc_init(ScStitcher *st, SC_CTX *x, uint64_t max_pending, uint64_t exit_grace) {
    memset(st, 0, sizeof *st);
    st->x = x;
    st->max_pending = max_pending;
    st->exit_grace = exit_grace;
}

/* What the stitcher holds itself (the tasks and stacks are the feed's to free). */
static void sc_free(ScStitcher *st) {
    PyMem_Free(st->bounds);
    st->bounds = NULL;
    st->nbounds = 0;
    PyMem_Free(st->ex);
    st->ex = NULL;
    st->exhead = st->exlen = st->excap = 0;
}

/* a counter fed by the input's own u64 counts saturates, as stitcher.py's does (U64_MAX) */
static inline void sc_add_sat(uint64_t *c, uint64_t n) { *c = n > UINT64_MAX - *c ? UINT64_MAX : *c + n; }

static void sc_plist_remove(ScStitcher *st, ScTask *t) {
    if (t->pprev) t->pprev->pnext = t->pnext; else st->p_first = t->pnext;
    if (t->pnext) t->pnext->pprev = t->pprev; else st->p_last = t->pprev;
    t->pprev = t->pnext = NULL;
}

static void sc_slist_remove(ScStitcher *st, ScTask *t) {
    if (t->sprev) t->sprev->snext = t->snext; else st->s_first = t->snext;
    if (t->snext) t->snext->sprev = t->sprev; else st->s_last = t->sprev;
    t->sprev = t->snext = NULL;
}

static void sc_order_remove(ScStitcher *st, ScSamp *s) {
    if (s->oprev) s->oprev->onext = s->onext; else st->o_first = s->onext;
    if (s->onext) s->onext->oprev = s->oprev; else st->o_last = s->oprev;
    s->oprev = s->onext = NULL;
}

/* Take a task's whole pending queue (stitcher.pending.pop), linked by tnext. */
static ScSamp *sc_take(ScStitcher *st, ScTask *t) {
    ScSamp *q = t->phead;
    if (!q) return NULL;
    sc_plist_remove(st, t);
    st->npending -= t->npend;
    t->phead = t->ptail = NULL;
    t->npend = 0;
    for (ScSamp *s = q; s; s = s->tnext) sc_order_remove(st, s);
    return q;
}

/* Stitcher._emit: s's outcome is final: counted (StitchReport.count), handed to the feed */
static int sc_resolve(ScStitcher *st, ScSamp *s, int key) {
    s->outcome = key;
    if (s->unchosen) return sc_emit(st->x, s);
    if (key == K_STITCHED) { st->stitched++; if (s->after_stack) st->after_stack++; }
    else if (key == K_PASSED) st->passed++;
    else st->unmatched[key]++;
    return sc_emit(st->x, s);
}

/* A file boundary: the next file of a sequence starts; ``time`` is the latest of the last. */
static inline int sc_boundary(ScStitcher *st, uint64_t time) {
    uint64_t *b = PyMem_Realloc(st->bounds, (st->nbounds + 1) * sizeof *b);
    if (!b) return -1;
    st->bounds = b;
    b[st->nbounds++] = time;
    return 0;
}

/* PerfFeed._across: a (chosen) sample at or before a file's latest time whose stack is after it */
static inline void sc_across(ScStitcher *st, ScSamp *s, ScStack *k) {
    if (!st->nbounds || s->unchosen || !s->has_time || !k->has_time) return;
    for (uint64_t i = 0; i < st->nbounds; i++)
        if (s->time <= st->bounds[i] && st->bounds[i] < k->time) { st->across++; return; }
}

static int sc_stitch(ScStitcher *st, ScSamp *s, ScStack *k) {
    sc_across(st, s, k);
    k->served++;
    sc_attach(st->x, s, k);
    return sc_resolve(st, s, K_STITCHED);
}

/* a stack let go of: an orphan if it served no sample */
static int sc_retire(ScStitcher *st, SC_TID tid, ScStack *k) {
    if (k->served) return 0;
    st->orphans++;
    return sc_orphan(st->x, tid, k);
}

/* Stitcher._exited: what tid left pending is task-exited; its stack is retired */
static int sc_exited_now(ScStitcher *st, SC_TID tid) {
    ScTask *t = sc_task_get(st->x, tid);
    if (!t) return 0;
    for (ScSamp *s = sc_take(st, t), *next; s; s = next) {
        next = s->tnext; s->tnext = NULL;
        if (sc_resolve(st, s, K_EXITED) < 0) return -1;
    }
    if (t->stack) {
        ScStack *k = t->stack;
        sc_slist_remove(st, t);
        t->stack = NULL;
        int rc = sc_retire(st, tid, k);
        sc_stack_drop(st->x, k);
        if (rc < 0) return -1;
    }
    sc_task_idle(st->x, t);
    return 0;
}

/* Stitcher._expire: the grace periods over by now */
static int sc_expire(ScStitcher *st, int has_now, uint64_t now) {
    if (!has_now || now < st->exit_grace) return 0;     /* limit < 0: nothing has expired */
    uint64_t limit = now - st->exit_grace;
    while (st->exlen && st->ex[st->exhead].time <= limit) {
        SC_TID tid = st->ex[st->exhead].tid;
        st->exhead++; st->exlen--;
        if (sc_exited_now(st, tid) < 0) return -1;
    }
    return 0;
}

/* Stitcher.evict_oldest: the oldest pending sample given up (--max-pending) */
static int sc_evict_oldest(ScStitcher *st) {
    ScSamp *s = st->o_first;
    if (!s) return 0;
    sc_order_remove(st, s);
    ScTask *t = sc_task_get(st->x, s->tid);
    t->phead = s->tnext;            /* per-task queues are oldest first too */
    if (!t->phead) t->ptail = NULL;
    s->tnext = NULL;
    t->npend--;
    if (t->npend == 0) sc_plist_remove(st, t);
    st->npending--;
    int rc = sc_resolve(st, s, K_EVICTED);
    if (!t->phead && !t->stack) sc_task_idle(st->x, t);
    return rc;
}

/* Stitcher._wait: s waits for the stack of its entry */
static int sc_wait(ScStitcher *st, ScTask *t, ScSamp *s) {
    s->lost_seq = st->lost_seq;
    s->tnext = NULL;
    if (!t->phead) {
        t->pprev = st->p_last; t->pnext = NULL;
        if (st->p_last) st->p_last->pnext = t; else st->p_first = t;
        st->p_last = t;
        t->phead = s;
    } else {
        t->ptail->tnext = s;
    }
    t->ptail = s; t->npend++;
    s->oprev = st->o_last; s->onext = NULL;
    if (st->o_last) st->o_last->onext = s; else st->o_first = s;
    st->o_last = s;
    st->npending++;
    if (st->npending > st->max_pending_seen) st->max_pending_seen = st->npending;
    if (st->npending > st->max_pending) return sc_evict_oldest(st);
    return 0;
}

/* Stitcher.sample: passed without a cookie; stitched when its task's stack has its cookie
 * (the entry's stack came first: "stitched_after_stack"); else it waits */
/* Stitcher._arrived: the report's samples are the chosen ones */
static inline void sc_arrived(ScStitcher *st, ScSamp *s) {
    if (s->unchosen) st->not_chosen++; else st->samples++;
}

static int sc_sample(ScStitcher *st, ScSamp *s) {
    sc_arrived(st, s);
    if (st->exlen && sc_expire(st, s->has_time, s->time) < 0) return -1;
    if (!s->has_cookie) return sc_resolve(st, s, K_PASSED);
    ScTask *t = sc_task_get(st->x, s->tid);
    if (t && t->stack && t->stack->cookie == s->cookie) {
        s->after_stack = 1;
        return sc_stitch(st, s, t->stack);
    }
    if (!t && !(t = sc_task_new(st->x, s->tid))) return -1;
    return sc_wait(st, t, s);
}

/* Stitcher.reject: a sample that cannot even wait for a stack (inline: the trace feed has none) */
static inline int sc_reject(ScStitcher *st, ScSamp *s, int reason) {
    sc_arrived(st, s);
    return sc_resolve(st, s, reason);
}

/* Stitcher.deferred: k, the stack of tid's latest kernel entry (the feed made it, the rules
 * own it from here), stitches what waits with its cookie; what waits with another can never
 * be stitched (lost_reason); the same cookie again is a duplicate and serves nothing.
 * dropped: entries of the record the feed could not take as frames. */
static int sc_deferred(ScStitcher *st, SC_TID tid, ScStack *k, uint64_t dropped) {
    st->deferred_records++;
    st->dropped_frames += dropped;
    if (st->exlen && sc_expire(st, k->has_time, k->time) < 0) {
        sc_stack_drop(st->x, k);
        return -1;
    }
    ScTask *t = sc_task_get(st->x, tid);
    ScStack *prev = t ? t->stack : NULL;
    if (prev && prev->cookie == k->cookie) {
        st->duplicates++;
        sc_stack_drop(st->x, k);
        return 0;
    }
    if (!t && !(t = sc_task_new(st->x, tid))) {
        sc_stack_drop(st->x, k);
        return -1;
    }
    t->stack = k;
    if (prev) {                     /* (a task keeps its place in stitcher.stacks' order) */
        int rc = sc_retire(st, tid, prev);
        sc_stack_drop(st->x, prev);
        if (rc < 0) return -1;
    } else {
        t->sprev = st->s_last; t->snext = NULL;
        if (st->s_last) st->s_last->snext = t; else st->s_first = t;
        st->s_last = t;
    }
    for (ScSamp *s = sc_take(st, t), *next; s; s = next) {
        next = s->tnext; s->tnext = NULL;
        int rc = s->cookie == k->cookie
            ? sc_stitch(st, s, k)
            : sc_resolve(st, s, sc_lost_reason(st->x, t, s, k->time,
                                               st->lost_seq > s->lost_seq ? K_LOST_AFTER : K_LOST));
        if (rc < 0) return -1;
    }
    return 0;
}

/* Stitcher.exit: tid's last stack may still come, after its EXIT: a grace period starts */
static int sc_exit(ScStitcher *st, SC_TID tid, uint64_t time) {
    if (!st->exit_grace) return sc_exited_now(st, tid);
    if (st->exhead + st->exlen == st->excap) {
        if (st->exhead) {
            memmove(st->ex, st->ex + st->exhead, st->exlen * sizeof(ScExited));
            st->exhead = 0;
        } else {
            size_t c = st->excap ? 2 * st->excap : 64;
            ScExited *n = PyMem_Realloc(st->ex, c * sizeof(ScExited));
            if (!n) { PyErr_NoMemory(); return -1; }
            st->ex = n; st->excap = c;
        }
    }
    st->ex[st->exhead + st->exlen].time = time;
    st->ex[st->exhead + st->exlen].tid = tid;
    st->exlen++;
    return 0;
}

/* Stitcher.reuse: a new task takes tid (FORK): the old one's grace period ends now */
static int sc_reuse(ScStitcher *st, SC_TID tid) {
    for (size_t i = 0; i < st->exlen; i++) {
        if (st->ex[st->exhead + i].tid == tid) {
            memmove(st->ex + st->exhead + i, st->ex + st->exhead + i + 1,
                    (st->exlen - i - 1) * sizeof(ScExited));
            st->exlen--;
            return sc_exited_now(st, tid);
        }
    }
    return 0;
}

/* Stitcher.lost: LOST records (events: the kernel's u64 count, summed saturating) */
static void sc_lost(ScStitcher *st, uint64_t events) {
    st->lost_seq++;
    st->lost_records++;
    sc_add_sat(&st->lost_events, events);
}

/* Stitcher.finish: the exited tasks, then what still waits (stream-ended, in stitcher.pending's
 * order), then the stacks left (orphans, in stitcher.stacks' order) */
static int sc_finish(ScStitcher *st) {
    while (st->exlen) {
        SC_TID tid = st->ex[st->exhead].tid;
        st->exhead++; st->exlen--;
        if (sc_exited_now(st, tid) < 0) return -1;
    }
    while (st->p_first) {
        ScTask *t = st->p_first;
        for (ScSamp *s = sc_take(st, t), *next; s; s = next) {
            next = s->tnext; s->tnext = NULL;
            if (sc_resolve(st, s, K_ENDED) < 0) return -1;
        }
        if (!t->stack) sc_task_idle(st->x, t);
    }
    while (st->s_first) {
        ScTask *t = st->s_first;
        ScStack *k = t->stack;
        sc_slist_remove(st, t);
        t->stack = NULL;
        int rc = sc_retire(st, t->tid, k);
        sc_stack_drop(st->x, k);
        sc_task_idle(st->x, t);
        if (rc < 0) return -1;
    }
    return 0;
}
#endif
