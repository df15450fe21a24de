/* workload_offcpu RUN_SECONDS [WAITS_FILE] - threads that block in known places for known times, for the
 * off-CPU time tests (perf record -e sched:sched_switch --call-graph fp,defer -k mono).
 *
 * Threads (named with pthread_setname_np, so prev_comm/next_comm in sched_switch show them):
 *   sleeper  loop: 4 x sleep_short() (nanosleep 2 ms, cpu_work() ~0.2 ms after each), sleep_long() (nanosleep 12 ms),
 *            cpu_work()
 *   feeder   loop: feed_sleep() (nanosleep 8 ms), feed_write() writes one byte to the pipe
 *   piper    loop: wait_pipe() blocking read() of one byte from that pipe
 *   locker1, locker2  loop: take_lock() (pthread_mutex_lock of a shared mutex), hold_lock() (nanosleep 6 ms while
 *            holding it), unlock, cpu_work(), yield_cpu() (sched_yield, so that the other locker gets the mutex)
 *   main     main_sleep() (nanosleep RUN_SECONDS), then tells everyone to stop and joins them
 * Every blocking libc call is made by a noinline wrapper of this program (nap_call, read_call, lock_call,
 * yield_call), called from the path function named above: glibc has no frame pointers, so a frame-pointer unwind
 * from inside libc loses the libc function's direct caller (the wrapper) but keeps the path function.
 * Each wait is timed with clock_gettime(CLOCK_MONOTONIC) right before and right after the libc call (in the
 * wrapper) and kept in memory; at exit this prints, to stdout or WAITS_FILE:
 *   # pid PID run_s RUN clock CLOCK_MONOTONIC
 *   # thread TID NAME              (one per thread, main included)
 *   TID KIND START_NS END_NS       (one per wait, KIND: sleep_short sleep_long pipe feed lock hold yield main)
 * The lines are in order of END_NS. "lock" waits are logged even when the mutex was free (then ~0 ns long).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NI __attribute__((noinline, noclone))
#define BARRIER() __asm__ volatile("" ::: "memory")

struct wait { pid_t tid; const char *kind; uint64_t start, end; };
#define MAXW 200000
static struct wait waits[MAXW];
static int nwaits;
static volatile int stop;
static int pipefd[2];
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
struct th { pid_t tid; char name[16]; };
static struct th threads[8];
static int nthreads;

static uint64_t mono_ns(void) {
	struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}
static void log_wait(const char *kind, uint64_t s, uint64_t e) {
	int i = __atomic_fetch_add(&nwaits, 1, __ATOMIC_RELAXED);
	if (i < MAXW) { waits[i].tid = gettid(); waits[i].kind = kind; waits[i].start = s; waits[i].end = e; }
}
static void name_thread(const char *name) {
	pthread_setname_np(pthread_self(), name);
	int i = __atomic_fetch_add(&nthreads, 1, __ATOMIC_RELAXED);
	threads[i].tid = gettid(); snprintf(threads[i].name, sizeof threads[i].name, "%s", name);
}

/* ---- wrappers: the only places that call blocking libc functions ---- */
NI static void nap_call(const char *kind, uint64_t ns) {
	struct timespec ts = { ns / 1000000000ull, ns % 1000000000ull };
	uint64_t s = mono_ns();
	nanosleep(&ts, NULL);
	uint64_t e = mono_ns();
	log_wait(kind, s, e); BARRIER();
}
NI static int read_call(int fd) {
	char c = 0;
	uint64_t s = mono_ns();
	ssize_t n = read(fd, &c, 1);
	uint64_t e = mono_ns();
	log_wait("pipe", s, e); BARRIER();
	return n == 1 ? c : -1;
}
NI static void lock_call(pthread_mutex_t *m) {
	uint64_t s = mono_ns();
	pthread_mutex_lock(m);
	uint64_t e = mono_ns();
	log_wait("lock", s, e); BARRIER();
}
NI static void yield_call(void) {
	uint64_t s = mono_ns();
	sched_yield();
	uint64_t e = mono_ns();
	log_wait("yield", s, e); BARRIER();
}
NI static void write_call(int fd, char c) {
	if (write(fd, &c, 1) != 1) perror("write");
	BARRIER();
}

/* ---- CPU work: spin ~0.2 ms ---- */
NI static void cpu_work(void) {
	uint64_t end = mono_ns() + 200000;
	volatile unsigned x = 1;
	while (mono_ns() < end) for (int i = 0; i < 200; i++) x = x * 1103515245u + 12345u;
	BARRIER();
}

/* ---- path functions ---- */
NI static void sleep_short(void) { nap_call("sleep_short", 2000000); BARRIER(); }
NI static void sleep_long(void) { nap_call("sleep_long", 12000000); BARRIER(); }
NI static int wait_pipe(void) { int c = read_call(pipefd[0]); BARRIER(); return c; }
NI static void feed_sleep(void) { nap_call("feed", 8000000); BARRIER(); }
NI static void feed_write(char c) { write_call(pipefd[1], c); BARRIER(); }
NI static void take_lock(void) { lock_call(&mtx); BARRIER(); }
NI static void hold_lock(void) { nap_call("hold", 6000000); BARRIER(); }
NI static void yield_cpu(void) { yield_call(); BARRIER(); }
NI static void main_sleep(double sec) { nap_call("main", (uint64_t)(sec * 1e9)); BARRIER(); }

/* ---- thread bodies ---- */
NI static void *sleeper_thread(void *arg) {
	(void)arg; name_thread("sleeper");
	while (!stop) {
		for (int i = 0; i < 4; i++) { sleep_short(); cpu_work(); }
		sleep_long(); cpu_work();
	}
	BARRIER(); return NULL;
}
NI static void *feeder_thread(void *arg) {
	(void)arg; name_thread("feeder");
	while (!stop) { feed_sleep(); feed_write('x'); }
	feed_write('q');
	BARRIER(); return NULL;
}
NI static void *piper_thread(void *arg) {
	(void)arg; name_thread("piper");
	for (;;) { int c = wait_pipe(); if (c == 'q' || c < 0) break; }
	BARRIER(); return NULL;
}
NI static void *locker_thread(void *arg) {
	name_thread((const char *)arg);
	while (!stop) {
		take_lock(); hold_lock(); pthread_mutex_unlock(&mtx);
		cpu_work(); yield_cpu();
	}
	BARRIER(); return NULL;
}

static int cmp_end(const void *a, const void *b) {
	const struct wait *x = a, *y = b;
	return x->end < y->end ? -1 : x->end > y->end;
}

int main(int argc, char **argv) {
	double sec = argc > 1 ? atof(argv[1]) : 1.5;
	FILE *out = stdout;
	if (argc > 2 && !(out = fopen(argv[2], "w"))) { perror(argv[2]); return 1; }
	if (pipe(pipefd)) { perror("pipe"); return 1; }
	name_thread("workload_offcpu");
	pthread_t t[5];
	pthread_create(&t[0], NULL, sleeper_thread, NULL);
	pthread_create(&t[1], NULL, piper_thread, NULL);
	pthread_create(&t[2], NULL, feeder_thread, NULL);
	pthread_create(&t[3], NULL, locker_thread, "locker1");
	pthread_create(&t[4], NULL, locker_thread, "locker2");
	main_sleep(sec);
	stop = 1;
	for (int i = 0; i < 5; i++) pthread_join(t[i], NULL);
	int n = nwaits < MAXW ? nwaits : MAXW;
	qsort(waits, n, sizeof waits[0], cmp_end);
	fprintf(out, "# pid %d run_s %g clock CLOCK_MONOTONIC\n", (int)getpid(), sec);
	for (int i = 0; i < nthreads; i++) fprintf(out, "# thread %d %s\n", (int)threads[i].tid, threads[i].name);
	for (int i = 0; i < n; i++)
		fprintf(out, "%d %s %llu %llu\n", (int)waits[i].tid, waits[i].kind,
			(unsigned long long)waits[i].start, (unsigned long long)waits[i].end);
	if (nwaits > MAXW) fprintf(stderr, "waits log overflow: %d\n", nwaits);
	return out == stdout ? 0 : fclose(out);
}
