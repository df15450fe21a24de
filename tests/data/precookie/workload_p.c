/* (p) lossy mix: forked processes, each with long and short-lived threads, signals, a 300-deep recursion,
 * short syscalls; many tasks on 2 CPUs so that small ring buffers overflow. argv: seconds, processes. */
#include "common.h"
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
static volatile unsigned long sink;
static double end_time;
static volatile sig_atomic_t got;
NI void p_getppid(void) { sink += getppid(); BARRIER(); }
NI void p_write(char *b) { sink += write(fd_null, b, 64); BARRIER(); }
NI void p_read(char *b) { sink += read(fd_zero, b, 2048); BARRIER(); }
NI void p_gettid(void) { sink += syscall(SYS_gettid); BARRIER(); }
NI void p_spin(int n) { for (int i = 0; i < n; i++) sink += i; BARRIER(); }
NI int deep(int n, char *b) {
	if (n == 0) { p_read(b); p_getppid(); return 0; }
	int r = deep(n - 1, b); BARRIER(); return r + 1;
}
NI void on_sig(int s) { got++; p_gettid(); (void)s; }
NI void short_body(void) { char b[256]; memset(b, 1, sizeof b); for (int i = 0; i < 50; i++) p_write(b); }
static void *short_thr(void *a) { (void)a; short_body(); return NULL; }
NI void loop_a(char *b) { p_getppid(); p_spin(200); p_write(b); }
NI void loop_b(char *b) { deep(300, b); }
NI void loop_c(char *b) { p_read(b); p_spin(500); p_gettid(); }
static void *long_thr(void *arg) {
	long id = (long)arg;
	char b[4096];
	memset(b, 0, sizeof b);
	while (now() < end_time) {
		for (int i = 0; i < 50; i++) {
			switch (id % 3) {
			case 0: loop_a(b); break;
			case 1: loop_b(b); break;
			case 2: loop_c(b); break;
			}
		}
		if (id == 0) kill(getpid(), SIGUSR1);
	}
	return NULL;
}
NI void spawn_short(void) { pthread_t t; if (pthread_create(&t, NULL, short_thr, NULL) == 0) pthread_join(t, NULL); }
static void child(int k) {
	pthread_t t[3];
	signal(SIGUSR1, on_sig);
	for (long i = 0; i < 3; i++) pthread_create(&t[i], NULL, long_thr, (void *)(i + k));
	while (now() < end_time) { spawn_short(); p_spin(2000); }
	for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
	exit(0);
}
int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	int procs = argc > 2 ? atoi(argv[2]) : 3;
	open_fds();
	end_time = now() + secs;
	for (int k = 0; k < procs; k++) if (fork() == 0) child(k);
	while (wait(NULL) > 0) ;
	printf("workload_p done\n");
	return 0;
}
