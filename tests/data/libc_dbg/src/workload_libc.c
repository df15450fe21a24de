/* workload_libc: 4 threads spending their time in libc itself, for naming frames with glibc's
 * debug file (libc6-dbg) installed.
 * - read()/write() of one byte: glibc 2.41+ enters the kernel through __syscall_cancel_arch, whose
 *   debug symbols put the zero-size label __syscall_cancel_arch_end at the syscall's return address
 *   (the user frame of every kernel sample);
 * - strdup/strndup/puts/snprintf of short strings: libc calls strlen, memcpy, strnlen, mempcpy,
 *   strchrnul through its own PLT, slots of R_X86_64_IRELATIVE relocations.
 * Usage: workload_libc SECONDS */
#include <pthread.h>
#include "common.h"

static double until;
static FILE *out;
static volatile unsigned long sink;

static NI void do_syscalls(int n) {
	char c = 'x';
	for (int i = 0; i < n; i++) {
		if (write(fd_null, &c, 1) != 1 || read(fd_zero, &c, 1) != 1)
			exit(2);
	}
	BARRIER();
}

static NI void do_strings(int n) {
	char buf[64];
	for (int i = 0; i < n; i++) {
		char *a = strdup("deferstitch");
		char *b = strndup("deferred callchain", 8);
		snprintf(buf, sizeof buf, "%s %s", a, b);
		fputs(buf, out);
		sink += strlen(buf);
		free(a);
		free(b);
	}
	BARRIER();
}

static NI void *worker(void *arg) {
	long id = (long)arg;
	while (now() < until) {
		do_syscalls(id & 1 ? 20 : 5);
		do_strings(id & 1 ? 20 : 200);
	}
	return NULL;
}

int main(int argc, char **argv) {
	pthread_t t[4];
	open_fds();
	out = fopen("/dev/null", "w");
	until = now() + (argc > 1 ? atof(argv[1]) : 1.0);
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	fclose(out);
	return 0;
}
