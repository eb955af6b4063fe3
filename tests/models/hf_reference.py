"""Reference models for the weight-loading test (tests/models/weights_test.cc).

GPT-2, BERT, GPT-Neo and LLaMA written in plain PyTorch with Hugging Face transformers' parameter names and
layouts (GPT-2's Conv1D keeps weights as [in, out] and q, k, v in one c_attn; BERT's names under
bert.* and cls.*; LLaMA's under model.*, rotate-half rotary, grouped key/value heads, an untied
lm_head), computing what the zoo's gpt, bert and llama compute (exact GELU, the zoo's norms).
No hub access: the weights are random. For each model the script writes, into OUT_DIR:

  <name>.safetensors     the weights as safetensors, written here byte by byte (the format is an
                         8-byte header length, a JSON header and raw tensors)
  <name>.pt              the same weights as torch.save writes a state dict
  <name>.expected.safetensors   tokens, logits and the loss on those tokens (and targets)

With --check PT SAFETENSORS it instead loads PT (written by slapo as torch.save writes) with
torch.load and checks that it holds exactly the tensors of SAFETENSORS (written by slapo too).

Usage: hf_reference.py OUT_DIR   |   hf_reference.py --check PT SAFETENSORS
"""
import collections
import json
import math
import struct
import sys

import torch
import torch.nn.functional as F

TINY = dict(vocab=128, max_seq=16, hidden=32, heads=4, layers=2, ffn=64)
LLAMA_TINY = dict(TINY, kv_heads=2)
NEO_TINY = dict(TINY, window=4)


def gpt2_weights(g, c):
    h, f = c["hidden"], c["ffn"]
    w = collections.OrderedDict()
    r = lambda *shape: torch.randn(*shape, generator=g) * 0.2
    w["transformer.wte.weight"] = r(c["vocab"], h)
    w["transformer.wpe.weight"] = r(c["max_seq"], h)
    for i in range(c["layers"]):
        p = f"transformer.h.{i}."
        w[p + "ln_1.weight"], w[p + "ln_1.bias"] = 1 + r(h), r(h)
        w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.bias"] = r(h, 3 * h), r(3 * h)
        w[p + "attn.c_proj.weight"], w[p + "attn.c_proj.bias"] = r(h, h), r(h)
        w[p + "ln_2.weight"], w[p + "ln_2.bias"] = 1 + r(h), r(h)
        w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"] = r(h, f), r(f)
        w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"] = r(f, h), r(h)
        # The causal-mask buffers older GPT-2 checkpoints carry.
        w[p + "attn.bias"] = torch.tril(torch.ones(c["max_seq"], c["max_seq"])).view(
            1, 1, c["max_seq"], c["max_seq"])
    w["transformer.ln_f.weight"], w["transformer.ln_f.bias"] = 1 + r(h), r(h)
    w["lm_head.weight"] = w["transformer.wte.weight"]  # tied
    return w


def attention(x, q, k, v, out_w, out_b, heads, causal):
    b, s, h = x.shape
    d = h // heads
    split = lambda t: t.view(b, s, heads, d).transpose(1, 2)
    q, k, v = split(q), split(k), split(v)
    scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(d))
    if causal:
        scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
    y = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, s, h)
    return F.linear(y, out_w, out_b)


def gpt2_forward(w, tokens, c):
    h = c["hidden"]
    x = w["transformer.wte.weight"][tokens] + w["transformer.wpe.weight"][: tokens.shape[1]]
    for i in range(c["layers"]):
        p = f"transformer.h.{i}."
        a = F.layer_norm(x, (h,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], 1e-5)
        qkv = a @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]  # Conv1D
        q, k, v = qkv.split(h, dim=-1)
        x = x + attention(a, q, k, v, w[p + "attn.c_proj.weight"].t(), w[p + "attn.c_proj.bias"],
                          c["heads"], causal=True)
        m = F.layer_norm(x, (h,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], 1e-5)
        m = F.gelu(m @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        x = x + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (h,), w["transformer.ln_f.weight"], w["transformer.ln_f.bias"], 1e-5)
    return x @ w["lm_head.weight"].t()


def bert_weights(g, c):
    h, f = c["hidden"], c["ffn"]
    w = collections.OrderedDict()
    r = lambda *shape: torch.randn(*shape, generator=g) * 0.2
    w["bert.embeddings.word_embeddings.weight"] = r(c["vocab"], h)
    w["bert.embeddings.position_embeddings.weight"] = r(c["max_seq"], h)
    w["bert.embeddings.token_type_embeddings.weight"] = r(2, h)
    w["bert.embeddings.LayerNorm.weight"], w["bert.embeddings.LayerNorm.bias"] = 1 + r(h), r(h)
    w["bert.embeddings.position_ids"] = torch.arange(c["max_seq"]).view(1, -1)
    for i in range(c["layers"]):
        p = f"bert.encoder.layer.{i}."
        for n in ("query", "key", "value"):
            w[p + f"attention.self.{n}.weight"], w[p + f"attention.self.{n}.bias"] = r(h, h), r(h)
        w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"] = r(h, h), r(h)
        w[p + "attention.output.LayerNorm.weight"] = 1 + r(h)
        w[p + "attention.output.LayerNorm.bias"] = r(h)
        w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = r(f, h), r(f)
        w[p + "output.dense.weight"], w[p + "output.dense.bias"] = r(h, f), r(h)
        w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"] = 1 + r(h), r(h)
    w["bert.pooler.dense.weight"], w["bert.pooler.dense.bias"] = r(h, h), r(h)
    w["cls.predictions.bias"] = r(c["vocab"])
    w["cls.predictions.transform.dense.weight"] = r(h, h)
    w["cls.predictions.transform.dense.bias"] = r(h)
    w["cls.predictions.transform.LayerNorm.weight"] = 1 + r(h)
    w["cls.predictions.transform.LayerNorm.bias"] = r(h)
    w["cls.predictions.decoder.weight"] = w["bert.embeddings.word_embeddings.weight"]  # tied
    w["cls.predictions.decoder.bias"] = w["cls.predictions.bias"]
    return w


def bert_forward(w, tokens, c):
    h, eps = c["hidden"], 1e-12
    ln = lambda x, p: F.layer_norm(x, (h,), w[p + ".weight"], w[p + ".bias"], eps)
    lin = lambda x, p: F.linear(x, w[p + ".weight"], w[p + ".bias"])
    e = "bert.embeddings."
    x = (w[e + "word_embeddings.weight"][tokens] + w[e + "position_embeddings.weight"][: tokens.shape[1]]
         + w[e + "token_type_embeddings.weight"][0])
    x = ln(x, e + "LayerNorm")
    for i in range(c["layers"]):
        p = f"bert.encoder.layer.{i}."
        s = p + "attention.self."
        a = attention(x, lin(x, s + "query"), lin(x, s + "key"), lin(x, s + "value"),
                      w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"],
                      c["heads"], causal=False)
        x = ln(x + a, p + "attention.output.LayerNorm")
        m = lin(F.gelu(lin(x, p + "intermediate.dense")), p + "output.dense")
        x = ln(x + m, p + "output.LayerNorm")
    t = "cls.predictions.transform."
    x = ln(F.gelu(lin(x, t + "dense")), t + "LayerNorm")
    return x @ w["cls.predictions.decoder.weight"].t() + w["cls.predictions.bias"]


def llama_weights(g, c):
    h, f = c["hidden"], c["ffn"]
    kv = c["kv_heads"] * (h // c["heads"])
    w = collections.OrderedDict()
    r = lambda *shape: torch.randn(*shape, generator=g) * 0.2
    w["model.embed_tokens.weight"] = r(c["vocab"], h)
    for i in range(c["layers"]):
        p = f"model.layers.{i}."
        w[p + "self_attn.q_proj.weight"] = r(h, h)
        w[p + "self_attn.k_proj.weight"] = r(kv, h)
        w[p + "self_attn.v_proj.weight"] = r(kv, h)
        w[p + "self_attn.o_proj.weight"] = r(h, h)
        w[p + "self_attn.rotary_emb.inv_freq"] = torch.ones(h // c["heads"] // 2)  # a buffer
        w[p + "mlp.gate_proj.weight"] = r(f, h)
        w[p + "mlp.up_proj.weight"] = r(f, h)
        w[p + "mlp.down_proj.weight"] = r(h, f)
        w[p + "input_layernorm.weight"] = 1 + r(h)
        w[p + "post_attention_layernorm.weight"] = 1 + r(h)
    w["model.norm.weight"] = 1 + r(h)
    w["lm_head.weight"] = r(c["vocab"], h)  # not tied
    return w


def llama_forward(w, tokens, c):
    """Hugging Face's LlamaModel: RMSNorm (eps 1e-5), rotate-half rotary with base 10000,
    grouped-query attention, SwiGLU."""
    h, heads, kvh = c["hidden"], c["heads"], c["kv_heads"]
    d = h // heads
    b, s = tokens.shape
    rms = lambda x, weight: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * weight
    inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.outer(torch.arange(s, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().float(), emb.sin().float()
    rotate_half = lambda x: torch.cat((-x[..., d // 2:], x[..., : d // 2]), dim=-1)
    x = w["model.embed_tokens.weight"][tokens]
    for i in range(c["layers"]):
        p = f"model.layers.{i}."
        a = rms(x, w[p + "input_layernorm.weight"])
        q = (a @ w[p + "self_attn.q_proj.weight"].t()).view(b, s, heads, d).transpose(1, 2)
        k = (a @ w[p + "self_attn.k_proj.weight"].t()).view(b, s, kvh, d).transpose(1, 2)
        v = (a @ w[p + "self_attn.v_proj.weight"].t()).view(b, s, kvh, d).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(heads // kvh, dim=1)
        v = v.repeat_interleave(heads // kvh, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
        y = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, s, h)
        x = x + y @ w[p + "self_attn.o_proj.weight"].t()
        m = rms(x, w[p + "post_attention_layernorm.weight"])
        m = F.silu(m @ w[p + "mlp.gate_proj.weight"].t()) * (m @ w[p + "mlp.up_proj.weight"].t())
        x = x + m @ w[p + "mlp.down_proj.weight"].t()
    return rms(x, w["model.norm.weight"]) @ w["lm_head.weight"].t()


def neo_weights(g, c):
    h, f = c["hidden"], c["ffn"]
    w = collections.OrderedDict()
    r = lambda *shape: torch.randn(*shape, generator=g) * 0.2
    w["transformer.wte.weight"] = r(c["vocab"], h)
    w["transformer.wpe.weight"] = r(c["max_seq"], h)
    for i in range(c["layers"]):
        p = f"transformer.h.{i}."
        w[p + "ln_1.weight"], w[p + "ln_1.bias"] = 1 + r(h), r(h)
        for n in ("q", "k", "v"):
            w[p + f"attn.attention.{n}_proj.weight"] = r(h, h)
        w[p + "attn.attention.out_proj.weight"] = r(h, h)
        w[p + "attn.attention.out_proj.bias"] = r(h)
        w[p + "attn.attention.bias"] = torch.tril(torch.ones(c["max_seq"], c["max_seq"], dtype=torch.bool))
        w[p + "ln_2.weight"], w[p + "ln_2.bias"] = 1 + r(h), r(h)
        w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"] = r(f, h), r(f)
        w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"] = r(h, f), r(h)
    w["transformer.ln_f.weight"], w["transformer.ln_f.bias"] = 1 + r(h), r(h)
    w["lm_head.weight"] = w["transformer.wte.weight"]
    return w


def neo_forward(w, tokens, c):
    """Hugging Face's GPTNeoModel: attention layers global, local, global, ... (local: the last
    window_size tokens), scores not scaled, q/k/v without biases, gelu_new."""
    h, heads, window = c["hidden"], c["heads"], c["window"]
    b, s = tokens.shape
    d = h // heads
    x = w["transformer.wte.weight"][tokens] + w["transformer.wpe.weight"][:s]
    for i in range(c["layers"]):
        p = f"transformer.h.{i}."
        a = F.layer_norm(x, (h,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], 1e-5)
        split = lambda t: t.view(b, s, heads, d).transpose(1, 2)
        q, k, v = (split(a @ w[p + f"attn.attention.{n}_proj.weight"].t()) for n in "qkv")
        scores = q @ k.transpose(-2, -1)  # no 1/sqrt(d)
        keep = torch.tril(torch.ones(s, s, dtype=torch.bool))
        if i % 2 == 1:  # local
            keep = keep ^ torch.tril(keep, -window)
        scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
        y = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, s, h)
        x = x + F.linear(y, w[p + "attn.attention.out_proj.weight"], w[p + "attn.attention.out_proj.bias"])
        m = F.layer_norm(x, (h,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], 1e-5)
        m = F.gelu(F.linear(m, w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"]), approximate="tanh")
        x = x + F.linear(m, w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"])
    x = F.layer_norm(x, (h,), w["transformer.ln_f.weight"], w["transformer.ln_f.bias"], 1e-5)
    return x @ w["lm_head.weight"].t()


DTYPES = {torch.float32: "F32", torch.int64: "I64", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.bool: "BOOL"}


def write_safetensors(path, tensors):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    seen = {}
    for name, t in tensors.items():
        t = t.contiguous()
        data = t.numpy().tobytes() if t.dtype != torch.bfloat16 else t.view(torch.int16).numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    names = {v: k for k, v in DTYPES.items()}
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        raw = bytearray(data[8 + n + b:8 + n + end])
        out[name] = torch.frombuffer(raw, dtype=names[e["dtype"]]).reshape(e["shape"])
    return out


def main():
    if sys.argv[1] == "--check":
        got = torch.load(sys.argv[2])
        want = read_safetensors(sys.argv[3])
        assert isinstance(got, dict), type(got)
        assert sorted(got) == sorted(want), (sorted(got), sorted(want))
        for k in want:
            assert torch.equal(got[k], want[k]), k
        print("same", len(got))
        return
    out = sys.argv[1]
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1234)
    tokens = torch.randint(TINY["vocab"], (3, 12), generator=g)
    targets = torch.randint(TINY["vocab"], (3, 12), generator=g)
    for name, make, forward, c in (("gpt2", gpt2_weights, gpt2_forward, TINY),
                                   ("bert", bert_weights, bert_forward, TINY),
                                   ("llama", llama_weights, llama_forward, LLAMA_TINY),
                                   ("gpt_neo", neo_weights, neo_forward, NEO_TINY)):
        w = make(g, c)
        with torch.no_grad():
            logits = forward(w, tokens, c)
        loss = F.cross_entropy(logits.reshape(-1, c["vocab"]), targets.reshape(-1))
        # safetensors cannot hold a tensor twice: the hub's files leave the tied copies out.
        unique, seen = collections.OrderedDict(), set()
        for k, v in w.items():
            if id(v) not in seen:
                unique[k] = v
                seen.add(id(v))
        write_safetensors(f"{out}/{name}.safetensors", unique)
        torch.save(w, f"{out}/{name}.pt")  # an OrderedDict, tied entries sharing storage
        write_safetensors(f"{out}/{name}.expected.safetensors",
                          {"tokens": tokens, "targets": targets, "logits": logits,
                           "loss": loss.reshape(1)})
    # A checkpoint as training scripts save it, the model's weights under "model", in bfloat16.
    w = gpt2_weights(g, TINY)
    torch.save({"model": collections.OrderedDict((k, v.to(torch.bfloat16)) for k, v in w.items()),
                "step": 100, "lr": 1e-4}, f"{out}/gpt2-bf16-checkpoint.pt")
    with torch.no_grad():
        logits = gpt2_forward(collections.OrderedDict(
            (k, v.to(torch.bfloat16).float()) for k, v in w.items()), tokens, TINY)
    write_safetensors(f"{out}/gpt2-bf16-checkpoint.expected.safetensors",
                      {"tokens": tokens, "targets": targets, "logits": logits,
                       "loss": F.cross_entropy(logits.reshape(-1, TINY["vocab"]),
                                               targets.reshape(-1)).reshape(1)})
    print("written", out)


if __name__ == "__main__":
    main()
