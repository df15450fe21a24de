#!/bin/bash
# build.sh OUTDIR - build the langs workloads on the host (Debian bookworm) into OUTDIR, which is then passed to
# the rig as EXTRA_OPT (every file of it lands in the guest's /opt/rig). Versions used for the captures:
#   g++ (Debian 12.2.0-14+deb12u1) 12.2.0
#   rustc 1.95.0 (59807616e 2026-04-14), LLVM 22.1.2 (rustup, /root/.cargo/bin)
#   go version go1.19.8 linux/amd64 (bookworm golang-go)
#   javac 17.0.15 (bookworm openjdk-17), --release 17; the guest runs sid's openjdk-21-jre-headless
#   prog.js is copied as it is (the guest runs sid's nodejs)
set -euo pipefail
S=$(cd "$(dirname "$0")" && pwd)
O=$(mkdir -p "$1" && cd "$1" && pwd)
export PATH=/root/.cargo/bin:$PATH
g++ -O2 -g -fno-omit-frame-pointer -o "$O/workload_cpp" "$S/workload_cpp.cpp"
RF=(-O -g -C force-frame-pointers=yes)
# rustc 1.95 mangles v0 by default (its prebuilt std too); legacy needs -Z unstable-options
RUSTC_BOOTSTRAP=1 rustc "${RF[@]}" -Z unstable-options -C symbol-mangling-version=legacy \
  -o "$O/workload_rust_legacy" "$S/workload_rust.rs"
rustc "${RF[@]}" -C symbol-mangling-version=v0 -o "$O/workload_rust_v0" "$S/workload_rust.rs"
rm -f "$O"/*.o "$O"/*.rcgu.o
(cd "$S/workload_go" && GOFLAGS=-buildvcs=false go build -o "$O/workload_go" .)   # default flags: DWARF kept, compressed
javac --release 17 -d "$O" "$S/java/Prog.java"
cp "$S/prog.js" "$O/"
# checks: legacy _ZN..17h<hash>E, v0 _R..., Go's compressed .debug_* (flag C)
set +o pipefail
nm "$O/workload_rust_legacy" | grep -m1 '_ZN13workload_rust'
nm "$O/workload_rust_v0" | grep -m1 '_RNvNtCs.*13workload_rust'
readelf -S -W "$O/workload_go" | grep -m1 '\.debug_info'
ls -l "$O"
