#!/usr/bin/env python3
"""The Hugging Face side of the GPU job `hf-check` (tests/gpu/run_on_gpu.sh).

Loads a BERT run exported by bin/export with transformers' BertForMaskedLM (float32, eval mode,
on the CPU), runs it on two fixed sequences (the second padded, the first with a second
segment), and writes reference.safetensors beside the model: the inputs, every hidden state
(hidden.0: the embeddings) and the MLM logits. The test Bert.ExportedRunMatchesTransformers
(SA_HF_CHECK_DIR=DIR) then compares ours with them.

Usage: python3 tests/gpu/hf_reference.py EXPORTED_DIR
"""
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import BertForMaskedLM


def special_ids(directory):
    with open(os.path.join(directory, "vocab.txt"), encoding="utf-8") as f:
        vocab = {line.rstrip("\n"): i for i, line in enumerate(f)}
    return {name: vocab.get(name, 0) for name in ("[PAD]", "[CLS]", "[SEP]", "[MASK]")}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    directory = sys.argv[1]
    model, info = BertForMaskedLM.from_pretrained(directory, output_loading_info=True)
    model = model.float().eval()
    # A weight transformers did not find would be initialized at random: say so, the check then fails.
    for key in ("missing_keys", "unexpected_keys", "mismatched_keys"):
        if info.get(key):
            print(f"hf_reference: {key}: {info[key]}")
    cfg = model.config
    sp = special_ids(directory)
    T = min(24, cfg.max_position_embeddings)
    g = torch.Generator().manual_seed(7)
    ids = torch.randint(5, cfg.vocab_size, (2, T), generator=g)
    ids[:, 0] = sp["[CLS]"]
    ids[0, T // 2] = sp["[SEP]"]
    ids[0, T - 1] = sp["[SEP]"]
    ids[1, 3] = sp["[MASK]"]
    types = torch.zeros_like(ids)
    types[0, T // 2 + 1:] = 1
    mask = torch.ones_like(ids)
    mask[1, T - 7:] = 0  # the second sequence is 7 pieces shorter: padding
    ids[1, T - 7:] = sp["[PAD]"]
    with torch.no_grad():
        out = model(input_ids=ids, token_type_ids=types, attention_mask=mask, output_hidden_states=True)
    ref = {"input_ids": ids.int(), "token_type_ids": types.int(), "attention_mask": mask.int(),
           "logits": out.logits.float().contiguous()}
    for i, h in enumerate(out.hidden_states):
        ref[f"hidden.{i}"] = h.float().contiguous()
    path = os.path.join(directory, "reference.safetensors")
    save_file(ref, path)
    print(f"hf_reference: {len(out.hidden_states)} hidden states and logits {list(out.logits.shape)} -> {path}")


if __name__ == "__main__":
    main()
