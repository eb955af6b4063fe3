"""bert-mini training step in PyTorch eager: the reference for BM_BertMiniStep.

The same model as slapo's `bert-mini` (models/zoo.cc, models/blocks.cc): word, position and
token-type embeddings (std 0.02), LayerNorm and dropout; 4 post-LN layers (bidirectional attention
with q/k/v/out projections, a GELU MLP, dropout 0.1); the masked-LM head (dense, GELU, LayerNorm)
and a decoder tied to the word embedding, with a bias. The loss is the masked-LM cross-entropy over
round(0.15 · seq) positions per sequence (targets -100 elsewhere), as models/training_batch.cc
draws them (here every chosen token becomes [MASK]; the 80/10/10 split changes no time). AdamW (lr 1e-4), batch 16, seq 128, 2 threads. Prints the median step time of 3
repetitions of 10 steps after 3 warm-up steps, like BM_BertMiniStep/0.

Run with Debian's interpreter (python3-torch): /usr/bin/python3 benchmark/python/bert_eager.py
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
        probs = self.attn_drop(torch.softmax(scores, -1))
        y = torch.matmul(probs, v).transpose(1, 2).contiguous().view(b, s, h)
        return self.resid_drop(self.out_proj(y))


class Layer(nn.Module):
    def __init__(self, hidden, heads, ffn, dropout):
        super().__init__()
        self.attn = Attention(hidden, heads, dropout)
        self.attn_norm = nn.LayerNorm(hidden, eps=1e-5)
        self.fc_in = nn.Linear(hidden, ffn)
        self.fc_out = nn.Linear(ffn, hidden)
        self.drop = nn.Dropout(dropout)
        self.mlp_norm = nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, x):
        h = self.attn_norm(x + self.attn(x))
        return self.mlp_norm(h + self.drop(self.fc_out(F.gelu(self.fc_in(h)))))


class Bert(nn.Module):
    def __init__(self, vocab, max_seq, hidden, heads, layers, ffn, dropout):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_seq, hidden)
        self.token_type = nn.Embedding(2, hidden)
        for e in (self.word, self.position, self.token_type):
            nn.init.normal_(e.weight, 0.0, 0.02)
        self.norm = nn.LayerNorm(hidden, eps=1e-5)
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Sequential(*[Layer(hidden, heads, ffn, dropout) for _ in range(layers)])
        self.dense = nn.Linear(hidden, hidden)
        self.head_norm = nn.LayerNorm(hidden, eps=1e-5)
        self.decoder_bias = nn.Parameter(torch.zeros(vocab))

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1]).unsqueeze(0)
        x = self.word(tokens) + self.position(pos) + self.token_type(torch.zeros_like(tokens))
        h = self.encoder(self.drop(self.norm(x)))
        h = self.head_norm(F.gelu(self.dense(h)))
        return torch.matmul(h, self.word.weight.t()) + self.decoder_bias


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
    vocab = 8192
    model = Bert(vocab, 256, 256, 4, 4, 1024, 0.1)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    torch.manual_seed(1)
    tokens = torch.randint(vocab, (a.batch, a.seq))
    # round(0.15 · seq) masked positions per sequence; -100 elsewhere.
    k = max(1, round(0.15 * a.seq))
    chosen = torch.rand(a.batch, a.seq).argsort(dim=1)[:, :k]
    targets = torch.full_like(tokens, -100).scatter_(1, chosen, tokens.gather(1, chosen))
    tokens = tokens.scatter(1, chosen, vocab - 1)

    def step():
        opt.zero_grad()
        logits = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))
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
