#!/usr/bin/python3
"""Reference numerics for our BERT: a small BERT for masked LM in plain torch ops (no transformers),
with seeded random weights saved in Hugging Face's layout, and what the C++ test compares against.

Writes into OUT (default: tests/reference/bert_small; with --exact-gelu the erf form of GELU,
hidden_act "gelu", as most published checkpoints, default tests/reference/bert_small_erf):
  config.json, vocab.txt, model.safetensors   the model, as `BertForMaskedLM.from_pretrained` reads it
  reference.safetensors                       inputs, every layer's output, the MLM loss, every gradient

Run with Debian's python3-torch:  /usr/bin/python3 tests/reference/bert_reference.py [OUT] [--exact-gelu]
The computation is in float64 on weights rounded to float32 (the file's precision), so the C++
float32 forward can be held to 1e-5 and its gradients to 1e-4 relative.
"""
import json
import math
import os
import struct
import sys

import torch

HIDDEN, LAYERS, HEADS, INTERMEDIATE, POSITIONS, TYPES = 16, 2, 2, 32, 16, 2
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "bank", "river", "money", "sat", "on", "##s", "##ing", "a", "of", "to", "and", "by", "it",
         "we", "run", "walk", "##ed", "shore", "loan"]
VOCAB = SPECIALS + WORDS
EPS = 1e-12


def save_safetensors(path, tensors, metadata=None):
    """The safetensors layout: 8-byte little-endian header size, JSON header, raw data."""
    codes = {torch.float32: "F32", torch.float64: "F64", torch.int32: "I32"}
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        b = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": codes[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def make_weights(gen):
    """Hugging Face names, [out, in] matrices; N(0, 0.02) as BERT's initializer, LayerNorm and biases
    perturbed so that a test cannot pass with them ignored."""
    def normal(*shape, std=0.02):
        return (torch.randn(*shape, generator=gen, dtype=torch.float64) * std).float()

    def around_one(n):
        return (1 + torch.randn(n, generator=gen, dtype=torch.float64) * 0.1).float()

    w = {
        "bert.embeddings.word_embeddings.weight": normal(len(VOCAB), HIDDEN, std=0.5),
        "bert.embeddings.position_embeddings.weight": normal(POSITIONS, HIDDEN, std=0.5),
        "bert.embeddings.token_type_embeddings.weight": normal(TYPES, HIDDEN, std=0.5),
        "bert.embeddings.LayerNorm.weight": around_one(HIDDEN),
        "bert.embeddings.LayerNorm.bias": normal(HIDDEN, std=0.1),
    }
    for i in range(LAYERS):
        p = f"bert.encoder.layer.{i}."
        for part in ["query", "key", "value"]:
            w[p + f"attention.self.{part}.weight"] = normal(HIDDEN, HIDDEN, std=0.3)
            w[p + f"attention.self.{part}.bias"] = normal(HIDDEN, std=0.1)
        w[p + "attention.output.dense.weight"] = normal(HIDDEN, HIDDEN, std=0.3)
        w[p + "attention.output.dense.bias"] = normal(HIDDEN, std=0.1)
        w[p + "attention.output.LayerNorm.weight"] = around_one(HIDDEN)
        w[p + "attention.output.LayerNorm.bias"] = normal(HIDDEN, std=0.1)
        w[p + "intermediate.dense.weight"] = normal(INTERMEDIATE, HIDDEN, std=0.3)
        w[p + "intermediate.dense.bias"] = normal(INTERMEDIATE, std=0.1)
        w[p + "output.dense.weight"] = normal(HIDDEN, INTERMEDIATE, std=0.3)
        w[p + "output.dense.bias"] = normal(HIDDEN, std=0.1)
        w[p + "output.LayerNorm.weight"] = around_one(HIDDEN)
        w[p + "output.LayerNorm.bias"] = normal(HIDDEN, std=0.1)
    w["cls.predictions.transform.dense.weight"] = normal(HIDDEN, HIDDEN, std=0.3)
    w["cls.predictions.transform.dense.bias"] = normal(HIDDEN, std=0.1)
    w["cls.predictions.transform.LayerNorm.weight"] = around_one(HIDDEN)
    w["cls.predictions.transform.LayerNorm.bias"] = normal(HIDDEN, std=0.1)
    w["cls.predictions.bias"] = normal(len(VOCAB), std=0.1)
    return w


def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_erf(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


GELU = gelu_tanh


def layer_norm(x, g, b):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + EPS) * g + b


def linear(x, w, b):
    return x @ w.t() + b


def forward(p, ids, types, mask, labels):
    """Returns every layer's output ([B, T, H]: the embeddings, then each layer) and the MLM loss:
    mean cross entropy over the labelled positions (label -100 elsewhere)."""
    B, T = ids.shape
    dh = HIDDEN // HEADS
    x = p["bert.embeddings.word_embeddings.weight"][ids] + p["bert.embeddings.position_embeddings.weight"][:T][None] \
        + p["bert.embeddings.token_type_embeddings.weight"][types]
    x = layer_norm(x, p["bert.embeddings.LayerNorm.weight"], p["bert.embeddings.LayerNorm.bias"])
    outputs = [x]
    additive = (1.0 - mask.double())[:, None, None, :] * torch.finfo(torch.float64).min
    for i in range(LAYERS):
        q = f"bert.encoder.layer.{i}."

        def heads(t):
            return t.view(B, T, HEADS, dh).transpose(1, 2)

        Q = heads(linear(x, p[q + "attention.self.query.weight"], p[q + "attention.self.query.bias"]))
        K = heads(linear(x, p[q + "attention.self.key.weight"], p[q + "attention.self.key.bias"]))
        V = heads(linear(x, p[q + "attention.self.value.weight"], p[q + "attention.self.value.bias"]))
        scores = Q @ K.transpose(-1, -2) / math.sqrt(dh) + additive
        ctx = (torch.softmax(scores, -1) @ V).transpose(1, 2).reshape(B, T, HIDDEN)
        a = linear(ctx, p[q + "attention.output.dense.weight"], p[q + "attention.output.dense.bias"])
        x = layer_norm(a + x, p[q + "attention.output.LayerNorm.weight"], p[q + "attention.output.LayerNorm.bias"])
        h = GELU(linear(x, p[q + "intermediate.dense.weight"], p[q + "intermediate.dense.bias"]))
        o = linear(h, p[q + "output.dense.weight"], p[q + "output.dense.bias"])
        x = layer_norm(o + x, p[q + "output.LayerNorm.weight"], p[q + "output.LayerNorm.bias"])
        outputs.append(x)
    t = GELU(linear(x, p["cls.predictions.transform.dense.weight"], p["cls.predictions.transform.dense.bias"]))
    t = layer_norm(t, p["cls.predictions.transform.LayerNorm.weight"], p["cls.predictions.transform.LayerNorm.bias"])
    logits = t @ p["bert.embeddings.word_embeddings.weight"].t() + p["cls.predictions.bias"]  # tied decoder
    loss = torch.nn.functional.cross_entropy(logits.view(-1, len(VOCAB)), labels.view(-1), ignore_index=-100)
    return outputs, loss


def main():
    global GELU
    exact = "--exact-gelu" in sys.argv[1:]
    GELU = gelu_erf if exact else gelu_tanh
    args = [a for a in sys.argv[1:] if a != "--exact-gelu"]
    out = args[0] if args else os.path.join(os.path.dirname(__file__), "bert_small_erf" if exact else "bert_small")
    os.makedirs(out, exist_ok=True)
    gen = torch.Generator().manual_seed(20261123)
    weights = make_weights(gen)
    # Two sequences, the second padded: [CLS] ... [SEP] with segment ids, and masked positions.
    v = {t: i for i, t in enumerate(VOCAB)}
    seqs = [["[CLS]", "the", "[MASK]", "of", "the", "river", "[SEP]", "we", "sat", "[SEP]"],
            ["[CLS]", "a", "loan", "[MASK]", "money", "[SEP]"]]
    T = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), T, dtype=torch.int64)
    types = torch.zeros_like(ids)
    mask = torch.zeros_like(ids)
    labels = torch.full_like(ids, -100)
    targets = {(0, 2): "bank", (0, 5): "river", (0, 8): "sat", (1, 3): "of", (1, 1): "a"}
    for b, s in enumerate(seqs):
        for t, tok in enumerate(s):
            ids[b, t], mask[b, t] = v[tok], 1
        if b == 0:
            types[b, 7:len(s)] = 1
    for (b, t), word in targets.items():
        labels[b, t] = v[word]
    params = {k: t.double().requires_grad_() for k, t in weights.items()}
    outputs, loss = forward(params, ids, types, mask, labels)
    loss.backward()
    ref = {"input_ids": ids.int(), "token_type_ids": types.int(), "attention_mask": mask.int(), "labels": labels.int(),
           "loss": loss.detach().reshape(1)}
    for i, h in enumerate(outputs):
        ref[f"hidden.{i}"] = h.detach()
    for k, t in params.items():
        ref["grad." + k] = t.grad
    save_safetensors(os.path.join(out, "model.safetensors"), weights, {"format": "pt"})
    save_safetensors(os.path.join(out, "reference.safetensors"), ref)
    config = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "vocab_size": len(VOCAB),
              "hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
              "intermediate_size": INTERMEDIATE, "hidden_act": "gelu" if exact else "gelu_new", "hidden_dropout_prob": 0.1,
              "attention_probs_dropout_prob": 0.1, "max_position_embeddings": POSITIONS, "type_vocab_size": TYPES,
              "initializer_range": 0.02, "layer_norm_eps": EPS, "pad_token_id": 0,
              "position_embedding_type": "absolute", "tie_word_embeddings": True}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    with open(os.path.join(out, "vocab.txt"), "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    print(f"loss {loss.item():.10f}; wrote {out}")


if __name__ == "__main__":
    main()
