/* The numbers the C twins share with their Python modules, written once for both extensions:
 * model.py's outcome keys, report.py's KEEP_FIRST, the engines' modes (perfdata/engine.py
 * for _accel.c, tracecmd/engine.py for _tracefeed.c), the perf.data record types _accel.c
 * reads (abi/consts.py) and tracecmd/reader.py's MAX_NEST. Each module exports them
 * (twin_export and its own modes), and tests/test_twin_constants.py fails when the Python
 * side says otherwise: a new reason goes into model.py, here, and into the rule that gives it.
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

/* events open at once on one CPU (task, softirq, irq, nmi): tracecmd/reader.py MAX_NEST */
#define MAX_NEST 4

/* uapi record types (include/uapi/linux/perf_event.h, tools/lib/perf/include/perf/event.h):
 * _accel.c's name, its number, abi/consts.py's PERF_RECORD_ name */
#define TWIN_RECORD_TYPES(X) \
    X(T_MMAP, 1, "MMAP") X(T_LOST, 2, "LOST") X(T_COMM, 3, "COMM") X(T_EXIT, 4, "EXIT") \
    X(T_FORK, 7, "FORK") X(T_SAMPLE, 9, "SAMPLE") X(T_MMAP2, 10, "MMAP2") \
    X(T_LOST_SAMPLES, 13, "LOST_SAMPLES") X(T_KSYMBOL, 17, "KSYMBOL") \
    X(T_DEFERRED, 22, "CALLCHAIN_DEFERRED") X(T_USER_START, 64, "USER_TYPE_START") \
    X(T_HEADER_ATTR, 64, "HEADER_ATTR") X(T_TRACING_DATA, 66, "TRACING_DATA") \
    X(T_FINISHED_ROUND, 68, "FINISHED_ROUND") X(T_ID_INDEX, 69, "ID_INDEX") \
    X(T_AUXTRACE_INFO, 70, "AUXTRACE_INFO") X(T_AUXTRACE, 71, "AUXTRACE") \
    X(T_EVENT_UPDATE, 78, "EVENT_UPDATE") X(T_HEADER_FEATURE, 80, "HEADER_FEATURE") \
    X(T_COMPRESSED, 81, "COMPRESSED") X(T_COMPRESSED2, 83, "COMPRESSED2")
#define TWIN_ENUM(name, number, py) name = number,
enum { TWIN_RECORD_TYPES(TWIN_ENUM) };
#undef TWIN_ENUM

/* the perf.data engine's (_accel.c) outputs: perfdata/engine.py MODE_* */
enum { MODE_FILE = 0, MODE_EVENTS = 1, MODE_NONE = 2, MODE_ORDERED = 3, MODE_COUNTED = 5,
       MODE_CHAINS = 6, MODE_OUTCOMES = 7 };
/* the trace.dat feed's (_tracefeed.c) outputs: tracecmd/engine.py MODE_NONE, MODE_SAMPLES,
 * MODE_RESOLVED */
enum { FEED_MODE_NONE, FEED_MODE_SAMPLES, FEED_MODE_RESOLVED };

/* RECORD_TYPES: {"MMAP": 1, ...}, abi/consts.py's names without PERF_RECORD_ */
static inline int twin_export_records(PyObject *m) {
    PyObject *types = PyDict_New(), *n;
    if (!types)
        return -1;
#define TWIN_ITEM(name, number, py) \
    if (!(n = PyLong_FromLong(number)) || PyDict_SetItemString(types, py, n) < 0) { \
        Py_XDECREF(n); \
        Py_DECREF(types); \
        return -1; \
    } \
    Py_DECREF(n);
    TWIN_RECORD_TYPES(TWIN_ITEM)
#undef TWIN_ITEM
    if (PyModule_AddObject(m, "RECORD_TYPES", types) < 0) {
        Py_DECREF(types);
        return -1;
    }
    return 0;
}

/* OUTCOME_KEYS (the names, by number: model.py's words), KEEP_FIRST, MAX_NEST and
 * RECORD_TYPES as attributes of module m */
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
    if (PyModule_AddIntConstant(m, "KEEP_FIRST", KEEP_FIRST) < 0
        || PyModule_AddIntConstant(m, "MAX_NEST", MAX_NEST) < 0)
        return -1;
    return twin_export_records(m);
}
#endif
