//! workload_rust: Rust frames into short syscalls through modules, generics, traits, closures and std::fs
//! (std::fs::metadata, File::open + read: std frames). Built twice (see build.sh): legacy mangling
//! (`_ZN...17h<hash>E`, workload_rust_legacy) and v0 mangling (`_R...`, workload_rust_v0).
//! Usage: workload_rust_* [seconds]
use std::hint::black_box;
use std::time::{Duration, Instant};

mod sys {
    use std::fs::{self, File};
    use std::io::Read;

    #[inline(never)]
    pub fn ppid() -> u64 {
        // std::os::unix::process::parent_id -> getppid
        std::os::unix::process::parent_id() as u64
    }

    #[inline(never)]
    pub fn meta_len(path: &str) -> u64 {
        fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    }

    #[inline(never)]
    pub fn read_some(path: &str, buf: &mut [u8]) -> u64 {
        match File::open(path) {
            Ok(mut f) => f.read(buf).unwrap_or(0) as u64,
            Err(_) => 0,
        }
    }

    /// Small enough for LLVM to inline into callers.
    #[inline]
    pub fn ppid_twice() -> u64 {
        ppid() + ppid()
    }
}

pub mod shapes {
    use super::sys;

    pub trait Toucher {
        fn touch(&mut self, rounds: u32) -> u64;
    }

    pub struct Statter<'a> {
        pub path: &'a str,
    }

    pub struct Reader<const N: usize> {
        pub path: &'static str,
        pub buf: [u8; N],
    }

    impl<'a> Toucher for Statter<'a> {
        #[inline(never)]
        fn touch(&mut self, rounds: u32) -> u64 {
            (0..rounds).map(|_| sys::meta_len(self.path)).sum()
        }
    }

    impl<const N: usize> Toucher for Reader<N> {
        #[inline(never)]
        fn touch(&mut self, rounds: u32) -> u64 {
            let mut s = 0;
            for _ in 0..rounds {
                s += sys::read_some(self.path, &mut self.buf);
            }
            s
        }
    }
}

pub mod engine {
    use super::shapes::{Reader, Statter, Toucher};
    use super::sys;
    use std::hint::black_box;

    pub struct Engine<T: Toucher> {
        pub inner: T,
        pub count: u64,
    }

    impl<T: Toucher> Engine<T> {
        #[inline(never)]
        pub fn drive(&mut self, rounds: u32) -> u64 {
            let s = self.inner.touch(rounds);
            self.count += 1;
            black_box(s)
        }
    }

    /// Generic over a closure: one instance per closure type.
    #[inline(never)]
    pub fn apply_n<F: FnMut(u32) -> u64>(n: u32, mut f: F) -> u64 {
        let mut s = 0;
        for i in 0..n {
            s += f(i);
        }
        black_box(s)
    }

    /// Dynamic dispatch through a trait object.
    #[inline(never)]
    pub fn dyn_round(items: &mut [Box<dyn Toucher>]) -> u64 {
        let mut s = 0;
        for t in items.iter_mut() {
            s += t.touch(2);
        }
        black_box(s)
    }

    #[inline(never)]
    pub fn closures(base: u64) -> u64 {
        let inner = |i: u32| sys::ppid() + base + i as u64;
        apply_n(3, |i| inner(i) + sys::meta_len("/"))
    }

    #[inline(never)]
    pub fn inlined_path() -> u64 {
        let mut s = 0;
        for _ in 0..3 {
            s += sys::ppid_twice();
        }
        black_box(s)
    }

    #[inline(never)]
    pub fn round() -> u64 {
        let mut e1 = Engine { inner: Statter { path: "/opt" }, count: 0 };
        let mut e2 = Engine { inner: Reader::<64> { path: "/dev/zero", buf: [0; 64] }, count: 0 };
        let mut dyns: Vec<Box<dyn Toucher>> = vec![
            Box::new(Statter { path: "/tmp" }),
            Box::new(Reader::<4096> { path: "/proc/self/stat", buf: [0; 4096] }),
        ];
        let mut s = e1.drive(3) + e2.drive(2);
        s += dyn_round(&mut dyns);
        s += closures(5);
        s += inlined_path();
        black_box(s)
    }
}

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1.0);
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut iters = 0u64;
    let mut sink = 0u64;
    while Instant::now() < end {
        for _ in 0..10 {
            sink = sink.wrapping_add(engine::round());
        }
        iters += 1;
    }
    black_box(sink);
    println!("workload_rust: {} x10 iterations", iters);
}
