"""gpt-mini training step in PyTorch eager: the reference for the C++ schedule benchmark.

The same model as slapo's `gpt-mini` (models/zoo.cc): token and position embeddings (std 0.02),
6 pre-LN blocks with q/k/v/out projections, causal masked softmax attention, a GELU MLP, dropout
0.1, a final LayerNorm, an LM head tied to the token embedding; AdamW (lr 1e-4), batch 16,
seq 128, 2 threads. Prints the median step time of 3 repetitions of 10 steps after 3 warm-up
steps, like BM_GptMiniStep/0.

Run with Debian's interpreter (python3-torch): /usr/bin/python3 benchmark/python/gpt_eager.py
"""
import argparse
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, hidden, heads, dropout):
        super().__init__()
        self.heads = heads
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
        mask = torch.ones(s, s, dtype=torch.bool).triu(1)
        probs = self.attn_drop(torch.softmax(scores.masked_fill(mask, float("-inf")), -1))
        y = torch.matmul(probs, v).transpose(1, 2).contiguous().view(b, s, h)
        return self.resid_drop(self.out_proj(y))


class Block(nn.Module):
    def __init__(self, hidden, heads, ffn, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden, eps=1e-5)
        self.attn = Attention(hidden, heads, dropout)
        self.ln_2 = nn.LayerNorm(hidden, eps=1e-5)
        self.fc_in = nn.Linear(hidden, ffn)
        self.fc_out = nn.Linear(ffn, hidden)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.drop(self.fc_out(F.gelu(self.fc_in(self.ln_2(x)))))


class Gpt(nn.Module):
    def __init__(self, vocab, max_seq, hidden, heads, layers, ffn, dropout):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(max_seq, hidden)
        nn.init.normal_(self.wte.weight, 0.0, 0.02)
        nn.init.normal_(self.wpe.weight, 0.0, 0.02)
        self.drop = nn.Dropout(dropout)
        self.h = nn.Sequential(*[Block(hidden, heads, ffn, dropout) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1]).unsqueeze(0)
        x = self.drop(self.wte(tokens) + self.wpe(pos))
        return torch.matmul(self.ln_f(self.h(x)), self.wte.weight.t())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repetitions", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Gpt(8192, 256, 256, 8, 6, 1024, 0.1)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    torch.manual_seed(1)
    tokens = torch.randint(8192, (a.batch, a.seq))
    targets = torch.randint(8192, (a.batch, a.seq))

    def step():
        opt.zero_grad()
        logits = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        opt.step()

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


if __name__ == "__main__":
    main()
