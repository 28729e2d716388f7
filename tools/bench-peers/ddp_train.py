"""One rank of poseidon-train's job done by PyTorch DistributedDataParallel over Gloo.

The same network (trainer/reference/fashion_cnn.h), data and normalisation
(trainer/data/fashion_mnist.h), shards (shard_order.py: poseidon-train's order, bit for bit),
batch per worker, optimizer and schedule as poseidon-train's defaults (tools/train/train_options.h):
SGD, momentum 0.9 (v = m v + g, w -= lr v, PyTorch's form and kernels/optimizer_element.h's),
lr 0.05 on a cosine to 0 over epochs x steps-per-epoch (also when --max-steps cuts the run
short, as poseidon-train does), the loss averaged over the worker's batch and the gradient over
the workers (DDP's allreduce / world size; poseidon's grad_scale 1/P). The initial parameters are
PyTorch's default, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases, the distribution
poseidon's reference layers draw from (not the same draws); DDP broadcasts rank 0's.

images/s counts the training steps only, as poseidon-train's summary does: rank 0's wall time
minus its evaluations. Run by tools/bench-peers/bench-peers with /usr/bin/python3 (Debian's torch);
ranks from RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT. Rank 0 writes --out (JSON).
"""
import argparse
import datetime
import gzip
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shard_order  # noqa: E402

MEAN, STD = 0.2860406, 0.3530242  # trainer/data/fashion_mnist.h: kFashionMnistNormalisation


def load_idx(path, magic):
    with gzip.open(path, "rb") as f:
        data = f.read()
    if int.from_bytes(data[0:4], "big") != magic:
        raise SystemExit(f"ddp_train.py: {path}: magic 0x{data[0:4].hex()}, expected 0x{magic:08x}")
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_split(data_dir, prefix):
    images = load_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"), 0x803)
    labels = load_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"), 0x801)
    x = (torch.from_numpy(images.astype(np.float32)) / 255.0 - MEAN) / STD
    return x.unsqueeze(1).contiguous(), torch.from_numpy(labels.astype(np.int64))


def fashion_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 512), nn.ReLU(), nn.Linear(512, 10))


def evaluate(model, x, y):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), 100):  # 1000 at once is 5x slower here (oneDNN's large-batch path)
            correct += (model(x[i:i + 100]).argmax(1) == y[i:i + 100]).sum().item()
    model.train()
    return correct, len(x)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=16, help="images per worker per step (poseidon-train's default)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: every epoch's)")
    p.add_argument("--seed", type=int, default=1, help="the shards' shuffle and torch's initial parameters")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (poseidon-train: 1 BLAS thread)")
    p.add_argument("--bucket-cap-mb", type=float, default=25.0, help="DDP's bucket_cap_mb (its default 25)")
    p.add_argument("--grad-as-bucket-view", action="store_true", help="DDP's gradient_as_bucket_view=True")
    p.add_argument("--data-dir", default=os.environ.get("POSEIDON_FASHION_MNIST_DIR") or
                   "/usr/share/datasets/fashion-mnist")
    p.add_argument("--timeout", type=int, default=300, help="Gloo's timeout, seconds")
    p.add_argument("--out", help="rank 0 writes its summary here (JSON)")
    a = p.parse_args()
    for name in ("batch", "epochs", "threads", "timeout"):
        if getattr(a, name) < 1:
            p.error(f"--{name} {getattr(a, name)}: expected an integer >= 1")
    if a.max_steps < 0:
        p.error(f"--max-steps {a.max_steps}: expected >= 0")
    if a.bucket_cap_mb <= 0:
        p.error(f"--bucket-cap-mb {a.bucket_cap_mb}: expected > 0")
    if not os.path.isdir(a.data_dir):
        p.error(f"--data-dir '{a.data_dir}': not a directory")
    return a


def main():
    a = parse_args()
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=a.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    train_x, train_y = load_split(a.data_dir, "train")
    test_x, test_y = (load_split(a.data_dir, "t10k") if rank == 0 else (None, None))
    torch.manual_seed(a.seed)
    model = DDP(fashion_cnn(), bucket_cap_mb=a.bucket_cap_mb, gradient_as_bucket_view=a.grad_as_bucket_view)
    optimizer = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    steps_per_epoch = shard_order.steps_per_epoch(len(train_x), world, a.batch)
    total = a.epochs * steps_per_epoch
    # kernels/optimizer_config.h: lr_t = base (1 + cos(pi t / max_steps)) / 2, t from 0.
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda t: 0.5 * (1 + math.cos(math.pi * min(t, total) / total)))
    loss_fn = nn.CrossEntropyLoss()
    steps, eval_seconds, epochs = 0, 0.0, []
    dist.barrier()
    start = time.monotonic()
    limit = a.max_steps or total
    for epoch in range(a.epochs):
        if steps >= limit:
            break
        perm = torch.tensor(shard_order.epoch_permutation(a.seed, epoch, len(train_x)), dtype=torch.int64)
        for step in range(steps_per_epoch):
            if steps >= limit:
                break
            idx = shard_order.worker_batch(perm, step, world, rank, a.batch)
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(train_x[idx]), train_y[idx])
            loss.backward()
            optimizer.step()
            schedule.step()
            steps += 1
            if rank == 0 and steps % 100 == 0:
                train_s = time.monotonic() - start - eval_seconds
                print(f"ddp: step {steps}/{limit} loss {loss.item():.4f} "
                      f"{steps * world * a.batch / train_s:.0f} images/s", file=sys.stderr, flush=True)
        if rank == 0:
            began = time.monotonic()
            correct, count = evaluate(model.module, test_x, test_y)
            eval_seconds += time.monotonic() - began
            epochs.append(correct / count)
            print(f"ddp: epoch {epoch + 1}: test accuracy {correct / count:.4f}", file=sys.stderr, flush=True)
    seconds = time.monotonic() - start
    dist.barrier()
    if rank == 0:
        train_seconds = seconds - eval_seconds
        summary = {
            "images_per_s": steps * world * a.batch / train_seconds, "test_accuracy": epochs[-1],
            "epoch_test_accuracy": epochs, "iterations": steps, "seconds": seconds, "train_seconds": train_seconds,
            "workers": world, "batch": a.batch, "threads": a.threads, "bucket_cap_mb": a.bucket_cap_mb,
            "gradient_as_bucket_view": a.grad_as_bucket_view, "torch": torch.__version__,
            "optimizer": f"SGD lr={a.lr} momentum={a.momentum} cosine over {total} steps"}
        print("ddp: done: " + json.dumps(summary), file=sys.stderr, flush=True)
        if a.out:
            with open(a.out, "w") as f:
                json.dump(summary, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
