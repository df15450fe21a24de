// workload_go: Go frames into short syscalls (os.Open+Read, os.ReadFile, os.Stat, syscall.Getppid) from
// nested functions, methods, an interface call, closures and small functions the compiler inlines.
// Built with Go 1.19 `go build` (default flags: DWARF kept, .zdebug_* compressed; see ../build.sh).
// Usage: workload_go [seconds]
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

var sink int64

//go:noinline
func ppid() int64 { return int64(syscall.Getppid()) }

//go:noinline
func statSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

//go:noinline
func openRead(path string, buf []byte) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	n, _ := f.Read(buf)
	f.Close()
	return int64(n)
}

//go:noinline
func readFile(path string) int64 {
	b, _ := os.ReadFile(path)
	return int64(len(b))
}

// small: inlined by the compiler into its callers (one call each, within Go 1.19's inlining budget)
func ppidPlus(k int64) int64 { return ppid() + k }
func statPlus(p string) int64 { return statSize(p) + 1 }

type toucher interface{ touch(rounds int) int64 }

type statter struct{ path string }
type reader struct {
	path string
	buf  []byte
}

//go:noinline
func (s *statter) touch(rounds int) int64 {
	var t int64
	for i := 0; i < rounds; i++ {
		t += statPlus(s.path) + statPlus("/opt")
	}
	return t
}

//go:noinline
func (r *reader) touch(rounds int) int64 {
	var t int64
	for i := 0; i < rounds; i++ {
		t += openRead(r.path, r.buf)
	}
	return t
}

//go:noinline
func viaInterface(ts []toucher) int64 {
	var t int64
	for _, x := range ts {
		t += x.touch(2)
	}
	return t
}

//go:noinline
func applyN(n int, f func(int) int64) int64 {
	var t int64
	for i := 0; i < n; i++ {
		t += f(i)
	}
	return t
}

//go:noinline
func closures(base int64) int64 {
	inner := func(i int) int64 { return ppid() + base + int64(i) }
	return applyN(3, func(i int) int64 { return inner(i) + readFile("/proc/self/stat") })
}

//go:noinline
func inlinedPath() int64 {
	var t int64
	for i := 0; i < 3; i++ {
		t += ppidPlus(int64(i))
	}
	return t
}

//go:noinline
func round(ts []toucher) int64 {
	return viaInterface(ts) + closures(5) + inlinedPath()
}

func main() {
	secs := 1.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			secs = v
		}
	}
	ts := []toucher{&statter{path: "/"}, &reader{path: "/dev/zero", buf: make([]byte, 64)}}
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	iters := 0
	for time.Now().Before(end) {
		for i := 0; i < 10; i++ {
			sink += round(ts)
		}
		iters++
	}
	fmt.Printf("workload_go: %d x10 iterations\n", iters)
}
