"""poseidon-train's shard order in Python, bit for bit (trainer/data/epoch_shuffle.h, shard.h).

The epoch's permutation of the training set is a Fisher-Yates shuffle driven by std::mt19937_64
seeded with splitmix64's finaliser over (seed, epoch); step s of worker r (of P, batch K) takes
perm[s*G + r*K : s*G + (r+1)*K] with G = P*K, and the last N mod G indices of an epoch are
dropped. std::mt19937_64's output is fixed by the C++ standard, so it is reimplemented here
rather than taken from a library (numpy has no 64-bit Mersenne Twister).
tests/tools/peers_shard_order_test.cc checks this file's order against the C++ one.

  /usr/bin/python3 shard_order.py SEED EPOCH N                      the epoch's permutation
  /usr/bin/python3 shard_order.py SEED EPOCH N WORKERS RANK BATCH    that worker's batches of the
                                                                     epoch, step after step
prints one index a line.
"""
import sys

MASK64 = (1 << 64) - 1


class MT19937_64:
    """std::mt19937_64: the C++ standard's parameters (w=64, n=312, m=156, r=31)."""

    N, M = 312, 156
    MATRIX_A = 0xB5026F5AA96619E9
    UPPER, LOWER = 0xFFFFFFFF80000000, 0x7FFFFFFF

    def __init__(self, seed):
        mt = [0] * self.N
        mt[0] = seed & MASK64
        for i in range(1, self.N):
            mt[i] = (6364136223846793005 * (mt[i - 1] ^ (mt[i - 1] >> 62)) + i) & MASK64
        self.mt, self.index = mt, self.N

    def _twist(self):
        mt, n, m = self.mt, self.N, self.M
        upper, lower, a = self.UPPER, self.LOWER, self.MATRIX_A
        for i in range(n):
            x = (mt[i] & upper) | (mt[(i + 1) % n] & lower)
            xa = x >> 1
            if x & 1:
                xa ^= a
            mt[i] = mt[(i + m) % n] ^ xa
        self.index = 0

    def __call__(self):
        if self.index >= self.N:
            self._twist()
        x = self.mt[self.index]
        self.index += 1
        x ^= (x >> 29) & 0x5555555555555555
        x ^= (x << 17) & 0x71D67FFFEDA60000
        x ^= (x << 37) & 0xFFF7EEE000000000
        x ^= x >> 43
        return x & MASK64


def epoch_engine_seed(seed, epoch):
    z = (seed + 0x9E3779B97F4A7C15 * (epoch + 1)) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def bounded_draw(engine, bound):
    reject_below = ((1 << 64) - bound) % bound  # 2^64 mod bound
    draw = engine()
    while draw < reject_below:
        draw = engine()
    return draw % bound


def epoch_permutation(seed, epoch, n):
    out = list(range(n))
    engine = MT19937_64(epoch_engine_seed(seed, epoch))
    for i in range(n, 1, -1):
        j = bounded_draw(engine, i)
        out[i - 1], out[j] = out[j], out[i - 1]
    return out


def steps_per_epoch(n, workers, batch):
    return n // (workers * batch)


def worker_batch(perm, step, workers, rank, batch):
    first = step * workers * batch + rank * batch
    return perm[first:first + batch]


def _self_check():
    # The standard's check value, the 10000th output of a default-constructed std::mt19937_64, and
    # libstdc++'s first (a wrong tempering constant once still gave the right 10000th).
    engine = MT19937_64(5489)
    assert engine() == 14514284786278117030, "MT19937_64's first output differs from std::mt19937_64's"
    for _ in range(9998):
        engine()
    assert engine() == 9981545732273789042, "MT19937_64 differs from the C++ standard's"


if __name__ == "__main__":
    usage = "expected SEED EPOCH N [WORKERS RANK BATCH], integers >= 0 (N, WORKERS, BATCH >= 1, RANK < WORKERS)"
    try:
        args = [int(a) for a in sys.argv[1:]]
    except ValueError:
        args = []
    if len(args) not in (3, 6) or min(args) < 0 or args[2] < 1 or (
            len(args) == 6 and (args[3] < 1 or args[5] < 1 or args[4] >= args[3] or args[3] * args[5] > args[2])):
        sys.stderr.write(f"shard_order.py: {' '.join(sys.argv[1:])}: {usage}\n")
        sys.exit(2)
    _self_check()
    perm = epoch_permutation(*args[:3])
    if len(args) == 6:
        workers, rank, batch = args[3:]
        perm = [i for s in range(steps_per_epoch(args[2], workers, batch))
                for i in worker_batch(perm, s, workers, rank, batch)]
    sys.stdout.write("\n".join(map(str, perm)) + "\n")
