// workload_cpp: C++ frames into short syscalls (getppid, stat, write to /dev/null, read from /dev/zero),
// reached through namespaces, classes, templates, a virtual call, std::function, lambdas, std::ostream
// flushing (libstdc++ frames), functions GCC inlines (DWARF inlined subroutines) and functions GCC
// clones (.constprop / .isra). Build: g++ -O2 -g -fno-omit-frame-pointer (see build.sh).
// Usage: workload_cpp [seconds]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#define NI __attribute__((noinline))
#define BARRIER() asm volatile("" ::: "memory")

static volatile unsigned long sink;

namespace deferstitch {
namespace kernel_entry {

// Leaves: real syscalls, never inlined.
NI long do_getppid() { long r = getppid(); BARRIER(); return r; }

NI long do_stat(const char *path) {
    struct stat st;
    long r = stat(path, &st);
    BARRIER();
    return r == 0 ? (long)st.st_mode : -1;
}

NI long do_read(int fd, char *buf, size_t n) { long r = read(fd, buf, n); BARRIER(); return r; }

// Small helper that GCC inlines into its callers (appears as an inlined subroutine in DWARF).
static inline long twice_ppid() { return do_getppid() + do_getppid(); }
static inline long stat_pair(const char *a, const char *b) { return do_stat(a) + do_stat(b); }

}  // namespace kernel_entry

namespace shapes {

class Shape {
public:
    virtual ~Shape() = default;
    virtual long touch(int rounds) = 0;
};

class Circle : public Shape {
public:
    explicit Circle(const char *p) : path_(p) {}
    NI long touch(int rounds) override {
        long s = 0;
        for (int i = 0; i < rounds; i++) s += kernel_entry::stat_pair(path_, "/opt");
        BARRIER();
        return s;
    }
private:
    const char *path_;
};

class Square : public Shape {
public:
    NI long touch(int rounds) override {
        long s = 0;
        for (int i = 0; i < rounds; i++) s += kernel_entry::twice_ppid();
        BARRIER();
        return s;
    }
};

}  // namespace shapes

namespace io {

// A template with two instantiations, each entering the kernel.
template <typename T, int N>
struct Reader {
    int fd;
    T buf[N];
    NI long pull(int times) {
        long s = 0;
        for (int i = 0; i < times; i++) s += kernel_entry::do_read(fd, reinterpret_cast<char *>(buf), sizeof buf);
        BARRIER();
        return s;
    }
};

// std::ostream flushing: libstdc++ frames (std::ostream::flush, std::basic_filebuf::overflow, ...) call write().
class Logger {
public:
    explicit Logger(const char *path) : out_(path) {}
    NI void line(const std::string &msg, int n) {
        out_ << msg << ' ' << n << '\n' << std::flush;
        BARRIER();
    }
private:
    std::ofstream out_;
};

}  // namespace io

// GCC clones static functions called with constant arguments (.constprop.N) and rewrites aggregates
// passed by value/reference (.isra.N).
struct Params { int rounds; int mode; const char *path; long pad[4]; };

static NI long cloned_worker(const Params &p, int k) {
    long s = 0;
    for (int i = 0; i < p.rounds * k; i++) {
        if (p.mode == 1) s += kernel_entry::do_stat(p.path);
        else s += kernel_entry::do_getppid();
    }
    BARRIER();
    return s;
}

static NI long cloned_const(int rounds, int which) {
    long s = 0;
    for (int i = 0; i < rounds; i++)
        s += which == 7 ? kernel_entry::do_getppid() : kernel_entry::do_stat("/");
    BARRIER();
    return s;
}

NI long call_clones_a() {
    Params p{3, 1, "/tmp", {0, 0, 0, 0}};
    long s = cloned_worker(p, 2) + cloned_const(4, 7);
    BARRIER();
    return s;
}

NI long call_clones_b() {
    Params p{2, 0, "/", {1, 2, 3, 4}};
    long s = cloned_worker(p, 3) + cloned_const(5, 7);
    BARRIER();
    return s;
}

template <typename F>
NI long apply_n(F &&f, int n) {
    long s = 0;
    for (int i = 0; i < n; i++) s += f(i);
    BARRIER();
    return s;
}

class Engine {
public:
    Engine() : log_("/dev/null") {
        fd_zero_ = open("/dev/zero", O_RDONLY);
        shapes_.emplace_back(new shapes::Circle("/"));
        shapes_.emplace_back(new shapes::Square());
        reader_small_.fd = fd_zero_;
        reader_big_.fd = fd_zero_;
        // std::function holding a lambda that calls back into the engine
        callback_ = [this](int k) { return this->via_function(k); };
    }
    NI long run_virtual() {
        long s = 0;
        for (auto &sh : shapes_) s += sh->touch(3);  // virtual call
        BARRIER();
        return s;
    }
    NI long run_templates() {
        long s = reader_small_.pull(4) + reader_big_.pull(2);
        BARRIER();
        return s;
    }
    NI long run_function() {
        long s = callback_(3);
        BARRIER();
        return s;
    }
    NI long run_lambdas() {
        int base = 2;
        auto inner = [&](int i) -> long { return kernel_entry::do_getppid() + base + i; };
        long s = apply_n([&](int i) { return inner(i) + kernel_entry::do_stat("/dev/null"); }, 3);
        BARRIER();
        return s;
    }
    NI void run_logging(int n) {
        for (int i = 0; i < 3; i++) log_.line("tick", n + i);
        BARRIER();
    }
    NI long via_function(int k) {
        long s = 0;
        for (int i = 0; i < k; i++) s += kernel_entry::twice_ppid();
        BARRIER();
        return s;
    }
private:
    int fd_zero_;
    std::vector<std::unique_ptr<shapes::Shape>> shapes_;
    io::Reader<char, 64> reader_small_;
    io::Reader<long, 512> reader_big_;
    io::Logger log_;
    std::function<long(int)> callback_;
};

}  // namespace deferstitch

static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    deferstitch::Engine e;
    double end = now() + secs;
    unsigned long iters = 0;
    while (now() < end) {
        for (int i = 0; i < 20; i++) {
            sink += e.run_virtual();
            sink += e.run_templates();
            sink += e.run_function();
            sink += e.run_lambdas();
            e.run_logging(i);
            sink += deferstitch::call_clones_a();
            sink += deferstitch::call_clones_b();
        }
        iters++;
    }
    printf("workload_cpp: %lu x20 iterations\n", iters);
    return 0;
}
