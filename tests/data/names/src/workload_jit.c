/* (jit) code generated at run time into anonymous executable memory, named in /tmp/perf-PID.map.
 * Frame-pointer prologues; leaf JIT functions enter the kernel with short syscalls; one JIT function
 * calls JIT code, one calls back into C, one stays unnamed; halfway through the process forks and the
 * child (which writes no map of its own) runs the same code. */
#include "common.h"
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
static volatile unsigned long sink;
typedef long (*jfn)(void);
static unsigned char *code, *pc;
static FILE *map;

static unsigned char *begin(void) { while ((pc - code) % 16) *pc++ = 0xcc; unsigned char *s = pc;
	*pc++ = 0x55; *pc++ = 0x48; *pc++ = 0x89; *pc++ = 0xe5; return s; }     /* push rbp; mov rbp,rsp */
static void end(void) { *pc++ = 0x5d; *pc++ = 0xc3; }                         /* pop rbp; ret */
static void sys(int nr) { *pc++ = 0xb8; memcpy(pc, &nr, 4); pc += 4; *pc++ = 0x0f; *pc++ = 0x05; }
static void call(unsigned char *to) { int rel = (int)(to - (pc + 5)); *pc++ = 0xe8; memcpy(pc, &rel, 4); pc += 4; }
static void call_abs(void *to) { *pc++ = 0x48; *pc++ = 0xb8; memcpy(pc, &to, 8); pc += 8; *pc++ = 0xff; *pc++ = 0xd0; }
static jfn named(unsigned char *s, const char *name) {
	if (name) fprintf(map, "%lx %lx %s\n", (unsigned long)s, (unsigned long)(pc - s), name);
	return (jfn)s;
}
NI long c_callback(void) { sink += getppid(); BARRIER(); return 0; }

static jfn j_ppid, j_uid, j_pair, j_back, j_anon;
NI void alpha_fn(void) { sink += j_pair(); BARRIER(); }
NI void beta_fn(void) { sink += j_ppid(); BARRIER(); }
NI void gamma_fn(void) { sink += j_back(); BARRIER(); }
NI void delta_fn(void) { sink += j_anon(); BARRIER(); }
NI void run(double secs) {
	double end_t = now() + secs;
	while (now() < end_t)
		for (int i = 0; i < 500; i++) { alpha_fn(); beta_fn(); gamma_fn(); delta_fn(); }
}
int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	code = pc = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) { perror("mmap"); return 1; }
	char path[64]; snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
	map = fopen(path, "w"); if (!map) { perror(path); return 1; }
	unsigned char *s;
	s = begin(); sys(SYS_getppid); end(); j_ppid = named(s, "jit_getppid");
	s = begin(); sys(SYS_getuid); end(); j_uid = named(s, "jit_getuid");
	s = begin(); call((unsigned char *)j_ppid); call((unsigned char *)j_uid); end(); j_pair = named(s, "jit_pair");
	s = begin(); call_abs((void *)c_callback); end(); j_back = named(s, "jit callback [tier 2]");
	s = begin(); sys(SYS_getpid); end(); j_anon = named(s, NULL);
	fclose(map);
	run(secs / 2);
	pid_t child = fork();
	run(secs / 2);
	if (child > 0) waitpid(child, NULL, 0);
	printf("workload_jit: %s done\n", child ? "parent" : "child");
	return 0;
}
