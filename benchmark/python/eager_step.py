"""What the eager reference models share: their attention and the timed training loop.

gpt_eager.py and bert_eager.py build slapo's gpt-mini and bert-mini in plain PyTorch; both time
a step the way schedule_bench's BM_*MiniStep do (3 warm-up steps, then the median of repetitions of
`steps` steps) and print one line that benchmark/compare_eager.sh reads.
"""
import argparse
import math
import statistics
import time

import torch
import torch.nn as nn


class Attention(nn.Module):
    """Multi-head self-attention as slapo's models/attention.cc: q, k, v, out projections,
    scaled scores, causal mask (or none), softmax, dropout on the probabilities and the output."""

    def __init__(self, hidden, heads, dropout, causal):
        super().__init__()
        self.heads = heads
        self.causal = causal
        self.q_proj = nn.Linear(hidden, hidden)
        self.k_proj = nn.Linear(hidden, hidden)
        self.v_proj = nn.Linear(hidden, hidden)
        self.attn_drop = nn.Dropout(dropout)
        self.out_proj = nn.Linear(hidden, hidden)
        self.resid_drop = nn.Dropout(dropout)

    def forward(self, x):
        b, s, h = x.shape
        split = lambda t: t.view(b, s, self.heads, h // self.heads).transpose(1, 2)
        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(h // self.heads))
        if self.causal:
            mask = torch.ones(s, s, dtype=torch.bool).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        probs = self.attn_drop(torch.softmax(scores, -1))
        y = torch.matmul(probs, v).transpose(1, 2).contiguous().view(b, s, h)
        return self.resid_drop(self.out_proj(y))


def arguments():
    """--threads, --batch, --seq, --steps, --repetitions; sets the threads."""
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repetitions", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    return a


def time_steps(step, a):
    """Runs `step` 3 times, then `a.repetitions` times `a.steps` steps; prints the median."""
    for _ in range(3):
        step()
    per_step = []
    for _ in range(a.repetitions):
        start = time.perf_counter()
        for _ in range(a.steps):
            step()
        per_step.append((time.perf_counter() - start) / a.steps * 1000)
    print(f"python_eager_step_ms_median {statistics.median(per_step):.1f} "
          f"(repetitions: {', '.join(f'{x:.1f}' for x in per_step)}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads)")
