"""Nested Python functions entering the kernel with short syscalls (for python3 -X perf / -X perf_jit)."""
import os
import sys
import time


def leaf_ppid():
    return os.getppid()


def leaf_stat():
    return os.stat("/").st_mode


def middle(n):
    total = 0
    for _ in range(n):
        total += leaf_ppid()
    return total


def branch_a():
    return middle(20) + leaf_stat()


def branch_b():
    return [leaf_stat() for _ in range(10)]


def outer(seconds):
    end = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < end:
        branch_a()
        branch_b()
        rounds += 1
    return rounds


if __name__ == "__main__":
    print("pyprog:", outer(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0))
