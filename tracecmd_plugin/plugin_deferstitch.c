// SPDX-License-Identifier: MIT
/*
 * plugin_deferstitch.so — a libtraceevent plugin that makes the REAL `trace-cmd report` print,
 * under each ftrace:user_unwind_stack, its frames (=> path+offset) and the whole stacks (kernel
 * frames + user path+offset) of the events that waited on that cookie; under a
 * user_unwind_cookie, the stack of an event taken after its stack was written; inode_cache with
 * dev as major:minor; and at the end the summary of unmatched events.
 *
 * Thin on purpose: the stitching is the shared Python core (deferstitch.stitcher), reached
 * through an embedded interpreter, as trace-cmd's old Python plugin loader did (removed in
 * 2021). This file only forwards: load -> deferstitch.tracecmd.plugin.load(tep), each
 * user_unwind_stack -> .stack(tep, cpu, record offset), each user_unwind_cookie ->
 * .cookie(tep, cpu, record offset), unload -> .unload(tep).
 *
 * Build and install:   make plugin        (-> ~/.local/lib/traceevent/plugins/)
 * Use:                 trace-cmd report -i trace.dat
 *                      TRACEEVENT_PLUGIN_DIR=DIR trace-cmd report ...   (another install dir)
 *
 * libpython is not linked: it is dlopen'ed at load time (RTLD_GLOBAL, so the stdlib's extension
 * modules find it) and the handful of functions used are looked up by name. All are in the
 * stable ABI, so one build serves bookworm (trace-cmd 3.1.6, libtraceevent 1.7.1, Python 3.11)
 * and sid (3.4, 1.9.0, Python 3.14). Environment: DEFERSTITCH_LIBPYTHON (a libpython to use),
 * DEFERSTITCH_PATH (where the deferstitch package is; default: the checkout it was built from).
 *
 * libtraceevent calls, for an event with a handler (event-parse.c, print_event_info):
 *     print_pretty = event->handler(s, record, event, event->context);
 *     if (print_pretty) pretty_print(...)      -- so we print the event's own text first by
 *     setting TEP_EVENT_FL_NOHANDLE around tep_print_event(.., TEP_PRINT_INFO), then our block.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

#ifndef DEFERSTITCH_ROOT
#define DEFERSTITCH_ROOT ""
#endif
#ifndef DEFAULT_LIBPYTHON
#define DEFAULT_LIBPYTHON "libpython3.so"
#endif

typedef void PyObject;

static struct {
	int (*IsInitialized)(void);
	void (*InitializeEx)(int);
	void *(*EvalSaveThread)(void);
	int (*GILStateEnsure)(void);
	void (*GILStateRelease)(int);
	int (*RunSimpleStringFlags)(const char *, void *);
	PyObject *(*ImportModule)(const char *);
	PyObject *(*CallMethod)(PyObject *, const char *, const char *, ...);
	const char *(*AsUTF8AndSize)(PyObject *, ssize_t *);
	void (*DecRef)(PyObject *);
	void (*ErrPrint)(void);
} py;

static PyObject *module;		/* deferstitch.tracecmd.plugin */
static int broken;			/* after a failure: say it once, then stay out of the way */

static void fail(const char *what)
{
	fprintf(stderr, "deferstitch plugin: %s; trace-cmd report continues without stitching\n", what);
	broken = 1;
}

static void *open_libpython(void)
{
	const char *env = getenv("DEFERSTITCH_LIBPYTHON");
	char name[64];
	void *h;
	int minor;

	if (env && *env)
		return dlopen(env, RTLD_NOW | RTLD_GLOBAL);
	h = dlopen(DEFAULT_LIBPYTHON, RTLD_NOW | RTLD_GLOBAL);
	for (minor = 30; !h && minor >= 8; minor--) {
		snprintf(name, sizeof(name), "libpython3.%d.so.1.0", minor);
		h = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
		if (!h) {
			snprintf(name, sizeof(name), "libpython3.%d.so.1", minor);
			h = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
		}
	}
	return h;
}

#define BIND(field, sym) do { *(void **)&py.field = dlsym(lib, sym); \
	if (!py.field) { fail("libpython lacks " sym); return -1; } } while (0)

static int start_python(void)
{
	const char *root = getenv("DEFERSTITCH_PATH");
	char code[4096];
	void *lib = open_libpython();
	int gil;

	if (!lib) {
		fail("no libpython3 found (apt-get install libpython3-stdlib libpython3.11, "
		     "or set DEFERSTITCH_LIBPYTHON)");
		return -1;
	}
	BIND(IsInitialized, "Py_IsInitialized");
	BIND(InitializeEx, "Py_InitializeEx");
	BIND(EvalSaveThread, "PyEval_SaveThread");
	BIND(GILStateEnsure, "PyGILState_Ensure");
	BIND(GILStateRelease, "PyGILState_Release");
	BIND(RunSimpleStringFlags, "PyRun_SimpleStringFlags");
	BIND(ImportModule, "PyImport_ImportModule");
	BIND(CallMethod, "PyObject_CallMethod");
	BIND(AsUTF8AndSize, "PyUnicode_AsUTF8AndSize");
	BIND(DecRef, "Py_DecRef");
	BIND(ErrPrint, "PyErr_Print");

	if (!py.IsInitialized()) {
		py.InitializeEx(0);		/* no signal handlers: trace-cmd keeps its own */
		py.EvalSaveThread();		/* from now on, the GIL is taken per call */
	}
	if (!root || !*root)
		root = DEFERSTITCH_ROOT;
	gil = py.GILStateEnsure();
	if (*root && !strchr(root, '\'') && strlen(root) < 3000) {
		snprintf(code, sizeof(code), "import sys\nif '%s' not in sys.path: sys.path.insert(0, '%s')\n",
			 root, root);
		py.RunSimpleStringFlags(code, NULL);
	}
	module = py.ImportModule("deferstitch.tracecmd.plugin");
	if (!module) {
		py.ErrPrint();
		py.GILStateRelease(gil);
		fail("cannot import deferstitch.tracecmd.plugin (set DEFERSTITCH_PATH to the checkout)");
		return -1;
	}
	py.GILStateRelease(gil);
	return 0;
}

/* Call deferstitch.tracecmd.plugin.<method>(...) and append its str result to s (or stdout);
 * returns the length of that text (0: nothing, or a failure). */
static ssize_t call(struct trace_seq *s, const char *method, const char *fmt,
		 unsigned long long a, unsigned long long b, unsigned long long c)
{
	PyObject *ret;
	const char *text;
	ssize_t len = 0;
	int gil;

	if (broken || !module)
		return 0;
	gil = py.GILStateEnsure();
	ret = py.CallMethod(module, method, fmt, a, b, c);
	if (!ret) {
		py.ErrPrint();
		py.GILStateRelease(gil);
		fail(method);
		return 0;
	}
	text = py.AsUTF8AndSize(ret, &len);
	if (text && len) {
		if (s) {
			trace_seq_puts(s, text);
		} else {
			fputs(text, stdout);
			fflush(stdout);
		}
	}
	py.DecRef(ret);
	py.GILStateRelease(gil);
	return len;
}

/* The event's own text, from its print fmt (our handler set aside for the call). */
static void own_text(struct trace_seq *s, struct tep_record *record, struct tep_event *event)
{
	event->flags |= TEP_EVENT_FL_NOHANDLE;
	tep_print_event(event->tep, s, record, "%s", TEP_PRINT_INFO);
	event->flags &= ~TEP_EVENT_FL_NOHANDLE;
}

static int user_unwind_stack_handler(struct trace_seq *s, struct tep_record *record,
				     struct tep_event *event, void *context)
{
	/* the stack a frame a line (=> path+0xoffset: its print fmt cannot show u64 arrays), then
	 * the stitched stacks it served; its own text if we have nothing for it */
	if (!call(s, "stack", "(KKK)", (unsigned long long)(unsigned long)event->tep,
		  (unsigned long long)record->cpu, record->offset))
		own_text(s, record, event);
	return 0;
}

static int user_unwind_cookie_handler(struct trace_seq *s, struct tep_record *record,
				      struct tep_event *event, void *context)
{
	/* the cookie in hex (it is two u32: cpu and a count), then the stitched stack of the event
	 * it follows when that stack was written before it */
	unsigned long long cookie;

	if (tep_get_field_val(NULL, event, "cookie", record, &cookie, 0) == 0)
		trace_seq_printf(s, "cookie=%#llx", cookie);
	else
		own_text(s, record, event);
	call(s, "cookie", "(KKK)", (unsigned long long)(unsigned long)event->tep,
	     (unsigned long long)record->cpu, record->offset);
	return 0;
}

static int inode_cache_handler(struct trace_seq *s, struct tep_record *record,
			       struct tep_event *event, void *context)
{
	/* inode=N dev=MAJOR:MINOR path=P (the kernel's s_dev: major << 20 | minor) */
	unsigned long long inode, dev;
	struct tep_format_field *path = tep_find_field(event, "path");
	int len = 0;
	const char *text = path ? tep_get_field_raw(NULL, event, "path", record, &len, 0) : NULL;

	if (!text || tep_get_field_val(NULL, event, "inode", record, &inode, 0) ||
	    tep_get_field_val(NULL, event, "dev", record, &dev, 0)) {
		own_text(s, record, event);		/* another layout (hash-keyed, ...) */
		return 0;
	}
	trace_seq_printf(s, "inode=%llu dev=%llu:%llu path=%.*s", inode, dev >> 20, dev & 0xfffff,
			 (int)strnlen(text, len > 0 ? (size_t)len : 0), text);
	return 0;
}

static const struct {
	const char *system, *name;
	tep_event_handler_func func;
} handlers[] = {
	{ "ftrace", "user_unwind_stack", user_unwind_stack_handler },
	{ "ftrace", "user_unwind_cookie", user_unwind_cookie_handler },
	{ "inode_cache", "inode_cache", inode_cache_handler },
};

int TEP_PLUGIN_LOADER(struct tep_handle *tep)
{
	size_t i;

	if (!module && !broken && start_python())
		return 0;			/* not fatal for trace-cmd: report without us */
	call(NULL, "load", "(K)", (unsigned long long)(unsigned long)tep, 0, 0);
	for (i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
		tep_register_event_handler(tep, -1, handlers[i].system, handlers[i].name,
					   handlers[i].func, NULL);
	return 0;
}

void TEP_PLUGIN_UNLOADER(struct tep_handle *tep)
{
	size_t i;

	for (i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
		tep_unregister_event_handler(tep, -1, handlers[i].system, handlers[i].name,
					     handlers[i].func, NULL);
	call(NULL, "unload", "(K)", (unsigned long long)(unsigned long)tep, 0, 0);
}
