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
import torch
import torch.nn as nn
import torch.nn.functional as F

from eager_step import Attention, arguments, time_steps


class Layer(nn.Module):
    def __init__(self, hidden, heads, ffn, dropout):
        super().__init__()
        self.attn = Attention(hidden, heads, dropout, causal=False)
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
    a = arguments()
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

    time_steps(step, a)


if __name__ == "__main__":
    main()
