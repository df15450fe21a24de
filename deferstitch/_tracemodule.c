/* deferstitch._tracedat, the module: the page walker (_tracedat.c) and the ftrace feed that runs
 * on it (_tracefeed.c), put together here so that the arrows run one way (the kallsyms index,
 * _kallsyms.c, stands alone):
 *
 *     _tracemodule.c --> _tracefeed.c --> _tracedat.c (the walker, _tracedat.h)
 *            \------------------------------^
 *
 * It exports Walker, Damaged, Feed, Kallsyms, the feed's modes and the numbers both sides share (_twin.h). */
#include "_tracedat.h"
#include "_twin.h"

static struct PyModuleDef tracedat_module = {
    PyModuleDef_HEAD_INIT, "deferstitch._tracedat",
    "A trace.dat's ring-buffer pages read by us, every offset and size checked.", -1, NULL,
};

PyMODINIT_FUNC PyInit__tracedat(void) {
    PyObject *feed = td_feed_type();
    if (!feed)
        return NULL;
    PyObject *m = PyModule_Create(&tracedat_module);
    if (!m)
        return NULL;
    Py_INCREF(feed);
    if (td_walker_ready(m) < 0 || td_kallsyms_ready(m) < 0 || PyModule_AddObject(m, "Feed", feed) < 0 || twin_export(m) < 0 ||
        PyModule_AddIntConstant(m, "FEED_MODE_NONE", FEED_MODE_NONE) < 0 ||
        PyModule_AddIntConstant(m, "FEED_MODE_SAMPLES", FEED_MODE_SAMPLES) < 0 ||
        PyModule_AddIntConstant(m, "FEED_MODE_RESOLVED", FEED_MODE_RESOLVED) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
