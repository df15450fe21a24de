/* The numbers the C twins share with their Python modules, written once for both extensions:
 * model.py's outcome keys, report.py's KEEP_FIRST and the engines' modes (perfdata/engine.py
 * for _accel.c, tracecmd/engine.py for _tracefeed.c). Each module exports them (twin_export
 * and its own modes), and tests/test_twin_constants.py fails when the Python side says
 * otherwise: a new reason goes into model.py, here, and into the rule that gives it.
 */
#ifndef DEFERSTITCH_TWIN_H
#define DEFERSTITCH_TWIN_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* An outcome by number, in the order of model.OUTCOME_KEYS: stitched, passed, then each
 * reason. The C rules (_stitchcore.h) give all but the last two: matching by task order,
 * where stacks carry no cookie, is stitcher.py's alone. */
enum { K_STITCHED, K_PASSED, K_LOST, K_LOST_AFTER, K_EXITED, K_ENDED, K_EVICTED, K_NO_TASK,
       K_AMBIGUOUS_NO_COOKIE, K_LOST_NO_COOKIE, NKEYS };

#define KEEP_FIRST 20           /* unmatched samples and orphan stacks listed one by one */

/* the perf.data engine's (_accel.c) outputs: perfdata/engine.py MODE_* */
enum { MODE_FILE = 0, MODE_EVENTS = 1, MODE_NONE = 2, MODE_ORDERED = 3, MODE_COUNTED = 5,
       MODE_CHAINS = 6, MODE_OUTCOMES = 7 };
/* the trace.dat feed's (_tracefeed.c) outputs: tracecmd/engine.py MODE_NONE, MODE_SAMPLES,
 * MODE_RESOLVED */
enum { FEED_MODE_NONE, FEED_MODE_SAMPLES, FEED_MODE_RESOLVED };

/* OUTCOME_KEYS (the names, by number: model.py's words) and KEEP_FIRST as attributes of
 * module m */
static inline int twin_export(PyObject *m) {
    static const char *const names[NKEYS] = {
        "stitched", "passed", "deferred-lost", "deferred-lost-after-lost-records", "task-exited",
        "stream-ended", "evicted", "no-task-id", "ambiguous-no-cookie", "lost-records-no-cookie",
    };
    PyObject *keys = PyTuple_New(NKEYS);
    if (!keys)
        return -1;
    for (int k = 0; k < NKEYS; k++) {
        PyObject *name = PyUnicode_FromString(names[k]);
        if (!name) {
            Py_DECREF(keys);
            return -1;
        }
        PyTuple_SET_ITEM(keys, k, name);
    }
    if (PyModule_AddObject(m, "OUTCOME_KEYS", keys) < 0) {
        Py_DECREF(keys);
        return -1;
    }
    return PyModule_AddIntConstant(m, "KEEP_FIRST", KEEP_FIRST);
}
#endif
