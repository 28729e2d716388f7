"""torch.distributed.all_reduce over Gloo, measured exactly as poseidon-allreduce-bench measures our
ring (tools/ring-bench/allreduce_bench.h): the same sizes (min, min x factor, ... max), the same
number of timed calls per size (byte budget / size within [min, max] iterations) after the same
warm-up, the buffer refilled before each call with values whose sum is exact in float and
checked after it, only the call timed, and the process's CPU time (every thread, user and kernel)
sampled around each call and summed over the ranks; rank 0 prints the same CSV. Ranks from RANK / WORLD_SIZE /
MASTER_ADDR / MASTER_PORT; run with /usr/bin/python3 (Debian's torch).
"""
import argparse
import datetime
import sys
import time

import torch
import torch.distributed as dist

PATTERN = 13  # allreduce_bench.cc's kPattern


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--min-bytes", type=int, default=4096)
    p.add_argument("--max-bytes", type=int, default=64 << 20)
    p.add_argument("--factor", type=int, default=4)
    p.add_argument("--byte-budget", type=int, default=1 << 30)
    p.add_argument("--min-iters", type=int, default=3)
    p.add_argument("--max-iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--timeout", type=int, default=300)
    a = p.parse_args()
    if a.min_bytes < 4 or a.min_bytes % 4 or a.max_bytes < a.min_bytes:
        p.error(f"--min-bytes {a.min_bytes} / --max-bytes {a.max_bytes}: expected multiples of 4, min <= max")
    if a.factor < 2 or a.min_iters < 1 or a.max_iters < a.min_iters:
        p.error(f"--factor {a.factor}, --min-iters {a.min_iters}, --max-iters {a.max_iters}: expected factor >= 2, "
                "1 <= min <= max")
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=a.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    sizes, b = [], a.min_bytes
    while b <= a.max_bytes:
        sizes.append(b // 4 * 4)
        b *= a.factor
    rows = []
    for size in sizes:
        n = size // 4
        pattern = torch.arange(n, dtype=torch.int64) % PATTERN
        mine = (pattern + rank + 1).to(torch.float32)
        expected = (pattern * world + world * (world + 1) // 2).to(torch.float32)
        buffer = torch.empty(n, dtype=torch.float32)
        iters = min(max(a.byte_budget // size, a.min_iters), a.max_iters)
        micros, cpu = [], 0.0
        for call in range(a.warmup + iters):
            buffer.copy_(mine)
            cpu_began = time.process_time()
            began = time.perf_counter()
            dist.all_reduce(buffer)
            us = (time.perf_counter() - began) * 1e6
            cpu_us = (time.process_time() - cpu_began) * 1e6
            if not torch.equal(buffer, expected):
                bad = (buffer != expected).nonzero()[0].item()
                sys.exit(f"gloo_allreduce.py: {size} bytes, call {call}: element {bad} is {buffer[bad].item()}, "
                         f"expected {expected[bad].item()}")
            if call >= a.warmup:
                micros.append(us)
                cpu += cpu_us
        micros.sort()
        k = len(micros)
        median = micros[k // 2] if k % 2 else (micros[k // 2 - 1] + micros[k // 2]) / 2
        rows.append((size, k, median, sum(micros) / k, micros[0], cpu / k))
    # CPU per call summed over the ranks, as poseidon-allreduce-bench does through its store.
    cpu_all = torch.tensor([row[5] for row in rows], dtype=torch.float64)
    dist.all_reduce(cpu_all)
    if rank == 0:
        print("bytes,iters,median_us,mean_us,min_us,algbw_gbps,busbw_gbps,cpu_us")
        for (size, k, median, mean, low, _), cpu in zip(rows, cpu_all.tolist()):
            algbw = size * 8e-3 / median
            print(f"{size},{k},{median:.1f},{mean:.1f},{low:.1f},{algbw:.4f},{algbw * 2 * (world - 1) / world:.4f},"
                  f"{cpu:.1f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
