"""A small GPT trainer in plain PyTorch, as a user would write one, tuned by slapo-tune.

    slapo-tune single-device --space examples/spaces/python-gpt.toml --objective samples_per_s \
        -- /usr/bin/python3 examples/python/train_gpt.py --batch-size {batch_size} \
           --checkpoint {checkpoint} --grad-accum {grad_accum} --threads {threads}

Activation checkpointing per block, gradient accumulation, intra-op threads, and DDP over Gloo when
started as several ranks (slapo-tune single-node --nproc N, or torchrun). Rank 0 reports, as most
scripts do: every step an intermediate samples/s, at the end samples/s, step time, peak memory
(resident, and the address space that --memory-budget caps) and the loss (python/slapo_tune.py).
"""

import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import slapo_tune  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402


class Block(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, seq, hidden, heads, layers, use_checkpoint):
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)
        self.head.weight = self.tokens.weight
        self.use_checkpoint = use_checkpoint
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)

    def forward(self, ids):
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))
        for block in self.blocks:
            if self.use_checkpoint:
                x = checkpoint(block, x, self.mask, use_reentrant=False)
            else:
                x = block(x, self.mask)
        return self.head(self.ln(x))


def peak_address_space():
    """This process's peak virtual memory in bytes (VmPeak): what an address-space limit such as
    slapo-tune's --memory-budget caps, and what resident memory (ru_maxrss) misses — LibTorch's
    mappings, about 1 GiB here. None where /proc is not there."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmPeak:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--checkpoint", type=int, choices=(0, 1), default=0)
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument("--threads", type=int, default=0, help="intra-op threads (0: PyTorch's choice)")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--vocab", type=int, default=1024)
    args = p.parse_args()

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = slapo_tune.rank()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if world > 1:
        dist.init_process_group("gloo")  # env:// — MASTER_ADDR/PORT, RANK, WORLD_SIZE
    torch.manual_seed(1234 + rank)
    model = GPT(args.vocab, args.seq, args.hidden, args.heads, args.layers, bool(args.checkpoint))
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    micro = args.batch_size // args.grad_accum
    if micro < 1 or args.batch_size % args.grad_accum:
        sys.exit(f"--batch-size {args.batch_size} is not a multiple of --grad-accum {args.grad_accum}")

    samples = 0
    timed = 0.0
    loss_value = float("nan")
    for step in range(args.warmup + args.steps):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        for _ in range(args.grad_accum):
            ids = torch.randint(0, args.vocab, (micro, args.seq + 1))
            logits = model(ids[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, args.vocab), ids[:, 1:].reshape(-1))
            (loss / args.grad_accum).backward()
        optimizer.step()
        loss_value = loss.item()
        elapsed = time.perf_counter() - start
        if step >= args.warmup:
            timed += elapsed
            samples += args.batch_size * world
            if rank == 0:
                slapo_tune.report(step=step - args.warmup, samples_per_s=samples / timed)
    if rank == 0:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        memory = {"peak_rss_bytes": peak}
        address_space = peak_address_space()
        if address_space:
            memory["peak_vm_bytes"] = address_space
        slapo_tune.report(samples_per_s=samples / timed, step_ms=1000 * timed / args.steps,
                          loss=loss_value, **memory)
        print(f"throughput: {samples / timed:.2f} samples/s, loss {loss_value:.3f}")
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
