"""gpt-mini training step in PyTorch eager: the reference for the C++ schedule benchmark.

The same model as slapo's `gpt-mini` (models/zoo.cc): token and position embeddings (std 0.02),
6 pre-LN blocks with q/k/v/out projections, causal masked softmax attention, a GELU MLP, dropout
0.1, a final LayerNorm, an LM head tied to the token embedding; AdamW (lr 1e-4), batch 16,
seq 128, 2 threads. Prints the median step time of 3 repetitions of 10 steps after 3 warm-up
steps, like BM_GptMiniStep/0.

Run with Debian's interpreter (python3-torch): /usr/bin/python3 benchmark/python/gpt_eager.py
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from eager_step import Attention, arguments, time_steps


class Block(nn.Module):
    def __init__(self, hidden, heads, ffn, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden, eps=1e-5)
        self.attn = Attention(hidden, heads, dropout, causal=True)
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
    a = arguments()
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

    time_steps(step, a)


if __name__ == "__main__":
    main()
