#!/usr/bin/env python3
"""transformers against our exported BERT and SaBERT (run by eval/peers/transformers_check.sh).

For each exported directory, transformers (CPU, float32, eval mode) runs a few real sentences;
our library runs the same input ids (`sensealign.Model.bert_outputs`); every hidden state
(and BERT's MLM logits) is compared over the positions that are not padding. BertTokenizerFast,
built from the exported vocab.txt with do_lower_case as tokenizer_config.json says, must give our
pieces (`sensealign.Model.pieces`) on every sentence of the WSD test sets. One line per check; the
exit status is 1 when any check fails.

Usage: PYTHONPATH=bin transformers_check.py --bert DIR --sabert DIR --work DIR
           [--wsd FILE.data.xml ...] [--corpus FILE] [--tol 1e-5]
"""
import argparse
import inspect
import json
import logging
import os
import re
import sys
import warnings
import xml.etree.ElementTree as ET

import torch
import transformers
import sensealign
from transformers import AutoTokenizer, BertForMaskedLM, BertModel, BertTokenizerFast

# Text the WSD sets lack (accents, CJK, full-width forms, format and control characters, joined
# punctuation), where two BERT tokenizers are most likely to part ways.
EDGE_CASES = [
    ["Café", "naïve", "Ångström", "MÜNCHEN", "résumé."],
    ["e-mail", "don't", "3.5", "U.S.A.", "(see", "§2)", "50%", "x+y=z"],
    ["東京タワー", "中文字", "한국어", "ｆｕｌｌ－ｗｉｄｔｈ", "ﬁne"],
    ["«quoted»", "—", "…", "soft\u00adhyphen", "zero\u200bwidth", "tab\u0007bell"],
]
N_SENTENCES = 4  # the forward check's batch: enough for padding and a sentence pair, cheap on 2 cores


def wsd_sentences(path):
    """The words of each <sentence> of a unified-format WSD file (wf and instance texts)."""
    out = []
    for sent in ET.parse(path).getroot().iter("sentence"):
        words = [el.text for el in sent if el.tag in ("wf", "instance") and el.text]
        if words:
            out.append(words)
    return out


def corpus_sentences(path, n):
    """Lines of our tokenized corpus (the fallback where ../shared is absent)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if 8 <= len(words) <= 40:
                out.append(words)
                if len(out) == n:
                    break
    return out


class Capture(logging.Handler):
    """Collects what transformers logs while loading, so the report can show it."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def load_tokenizer(directory, auto=False):
    """BertTokenizerFast over the exported vocab.txt, with do_lower_case (and strip_accents, if
    given) as the exported tokenizer_config.json says; or, with `auto`, what
    AutoTokenizer.from_pretrained makes of the directory (what a user would call)."""
    vocab = os.path.join(directory, "vocab.txt")
    with open(vocab, encoding="utf-8") as f:
        n = sum(1 for _ in f)
    if auto:
        tok, kw = AutoTokenizer.from_pretrained(directory, local_files_only=True), {}
    else:
        cfg_path = os.path.join(directory, "tokenizer_config.json")
        cfg = json.load(open(cfg_path)) if os.path.exists(cfg_path) else {}
        kw = {"do_lower_case": cfg.get("do_lower_case", True)}
        if "strip_accents" in cfg:
            kw["strip_accents"] = cfg["strip_accents"]
        # transformers 5 takes the file as `vocab` and silently ignores `vocab_file` (its tokenizer
        # then knows the five special tokens alone); 4.x takes `vocab_file`.
        params = inspect.signature(BertTokenizerFast.__init__).parameters
        tok = BertTokenizerFast(**{("vocab" if "vocab" in params else "vocab_file"): vocab}, **kw)
    # A tokenizer that lost the vocabulary would give [UNK] everywhere: stop here instead.
    if len(tok) != n:
        raise SystemExit(f"transformers check: {type(tok).__name__} from {vocab} has {len(tok)} entries, the file {n}")
    return tok, kw


def batch_inputs(tok, sentences, max_len):
    """[CLS] s [SEP] for the first sentences, [CLS] a [SEP] b [SEP] (segments 0 and 1) for the last
    two joined, padded to the longest; ids from transformers' tokenizer."""
    rows = [tok(s, is_split_into_words=True, truncation=True, max_length=max_len) for s in sentences[:-2]]
    rows.append(tok(sentences[-2], sentences[-1], is_split_into_words=True, truncation=True, max_length=max_len))
    T = max(len(r["input_ids"]) for r in rows)
    ids = torch.full((len(rows), T), tok.pad_token_id, dtype=torch.int32)
    types = torch.zeros((len(rows), T), dtype=torch.int32)
    mask = torch.zeros((len(rows), T), dtype=torch.int32)
    for i, r in enumerate(rows):
        n = len(r["input_ids"])
        ids[i, :n] = torch.tensor(r["input_ids"])
        types[i, :n] = torch.tensor(r["token_type_ids"])
        mask[i, :n] = 1
    return ids, types, mask


def diff(ours, theirs, valid):
    """Max |ours - theirs|, the same over (1 + |theirs|) (the gtest's mixed relative form: a trained
    model's activations exceed 1), and max |theirs|, over the valid rows."""
    o, t = ours[valid].double(), theirs[valid].double()
    d = (o - t).abs()
    return d.max().item(), (d / (1 + t.abs())).max().item(), t.abs().max().item()


def verdict(abs_d, rel_d, tol):
    if abs_d <= tol:
        return f"pass (abs and rel <= {tol:g})"
    if rel_d <= tol:
        return f"pass (rel <= {tol:g} only; abs {abs_d:.1e} > {tol:g})"
    return f"FAIL (abs and rel > {tol:g})"


def load_model(cls, name, directory):
    """cls.from_pretrained on the CPU in float32; the notes on what it loaded, and whether a weight
    the comparison needs was left at random (missing, mismatched)."""
    cap = Capture()
    tlog = logging.getLogger("transformers")
    tlog.addHandler(cap)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, info = cls.from_pretrained(directory, local_files_only=True, output_loading_info=True,
                                          dtype=torch.float32)
    tlog.removeHandler(cap)
    notes, ok = [], True
    for key in ("missing_keys", "mismatched_keys", "unexpected_keys", "error_msgs"):
        v = sorted(map(str, info.get(key) or []))
        if not v:
            continue
        shown = ", ".join(v[:5]) + (f", ... ({len(v)} in all)" if len(v) > 5 else "")
        notes.append(f"  note: {name} {cls.__name__}.from_pretrained {key}: {shown}")
        # BertModel's pooler (the NSP head's input) is outside what we train and export: random in
        # transformers, unused by the hidden states. Anything else left at random fails the check.
        if key != "unexpected_keys" and any(not k.startswith("pooler.") for k in v):
            ok = False
    for msg in cap.lines + [str(w.message) for w in caught]:
        msg = re.sub(r"\x1b\[[0-9;]*m", "", msg).strip()
        if msg and "LOAD REPORT" not in msg:  # the report repeats the keys noted above
            notes.append(f"  note: transformers says while loading {name} ({cls.__name__}): {msg.splitlines()[0][:300]}")
    return model.float().eval(), notes, ok


def forward_check(name, directory, sentences, tol, classes):
    """Our hidden states (and logits) against each transformers class's on the same ids: the check
    lines, the notes, and whether all passed."""
    lines, notes, ok = [], [], True
    tok, _ = load_tokenizer(directory)
    ids = types = mask = ours = None
    for cls in classes:
        model, n, loaded = load_model(cls, name, directory)
        notes += n
        ok &= loaded
        if ids is None:  # our side once per directory, on transformers' tokenizer's ids
            ids, types, mask = batch_inputs(tok, sentences, model.config.max_position_embeddings)
            got = sensealign.load(directory, device="cpu").bert_outputs(ids.int().numpy(), types.int().numpy(),
                                                                         mask.int().numpy())
            ours = {f"hidden.{i}": torch.from_numpy(h) for i, h in enumerate(got["hidden_states"])}
            if "logits" in got:
                ours["logits"] = torch.from_numpy(got["logits"])
        with torch.no_grad():
            out = model(input_ids=ids.long(), token_type_ids=types.long(), attention_mask=mask.long(),
                        output_hidden_states=True)
        valid = mask.bool()  # padding rows are left out: neither side defines them
        n_valid = int(valid.sum())
        hs = out.hidden_states
        per = [diff(ours[f"hidden.{i}"], hs[i], valid) for i in range(len(hs))]
        a, r, m = max(p[0] for p in per), max(p[1] for p in per), max(p[2] for p in per)
        v = verdict(a, r, tol)
        ok &= v.startswith("pass")
        lines.append(f"transformers {name} hidden ({cls.__name__}): max abs diff {a:.1e} (rel {r:.1e}; |values| up to "
                     f"{m:.3g}) over {len(hs)} states x {n_valid} pieces [per state: {' '.join(f'{p[0]:.1e}' for p in per)}]: {v}")
        if getattr(out, "logits", None) is not None:
            B, T = ids.shape
            theirs = out.logits.float()
            a, r, m = diff(ours["logits"].reshape(B, T, -1), theirs, valid)
            v = verdict(a, r, tol)
            ok &= v.startswith("pass")
            lines.append(f"transformers {name} mlm logits ({cls.__name__}): max abs diff {a:.1e} (rel {r:.1e}; |values| "
                         f"up to {m:.3g}) over {n_valid} pieces x {theirs.shape[-1]} ids: {v}")
    return lines, notes, ok


def pieces_check(name, directory, sentences, source, auto=False):
    tok, kw = load_tokenizer(directory, auto)
    ours = sensealign.load(directory, device="cpu").pieces(sentences)
    same, total, first_bad = 0, 0, None
    for i, s in enumerate(sentences):
        theirs = tok.convert_ids_to_tokens(tok(s, is_split_into_words=True, add_special_tokens=False)["input_ids"])
        total += len(theirs)
        if theirs == ours[i]:
            same += 1
        elif first_bad is None:
            k = next((j for j, (x, y) in enumerate(zip(theirs, ours[i])) if x != y), min(len(theirs), len(ours[i])))
            first_bad = (f"sentence {i} piece {k}: transformers {theirs[max(0, k - 2):k + 3]} vs ours "
                         f"{ours[i][max(0, k - 2):k + 3]}")
    unk = sum(p == tok.unk_token for o in ours for p in o)
    ok = same == len(sentences)
    how = (f"AutoTokenizer.from_pretrained: {type(tok).__name__}, do_lower_case={getattr(tok, 'do_lower_case', '?')}"
           if auto else f"BertTokenizerFast, {', '.join(f'{k}={v}' for k, v in kw.items())}")
    line = (f"transformers {name} tokenizer ({how}): "
            f"{same}/{len(sentences)} sentences give our pieces ({total} pieces, {unk} of ours [UNK]; {source}): "
            f"{'pass' if ok else 'FAIL'}")
    lines = [line] + ([f"  first difference: {first_bad}"] if first_bad else [])
    return lines, ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bert", required=True)
    ap.add_argument("--sabert", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--wsd", nargs="*", default=[])
    ap.add_argument("--corpus", default="build/corpus/handbook-en.train.txt")
    ap.add_argument("--tol", type=float, default=1e-5)
    a = ap.parse_args()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    # transformers' own load report and progress bars would interleave with the check lines: its
    # messages are collected (Capture) and shown as notes after them.
    transformers.utils.logging.disable_default_handler()
    transformers.utils.logging.disable_progress_bar()
    print(f"transformers {transformers.__version__}, torch {torch.__version__} (CPU, float32)")

    wsd = [s for p in a.wsd for s in wsd_sentences(p)]
    if wsd:
        fwd = wsd[:N_SENTENCES]
        fwd_src = os.path.basename(a.wsd[0])
        tok_src = "WSD tests " + " ".join(os.path.basename(p).split(".")[0] for p in a.wsd)
        tok_sents = wsd
    else:  # no ../shared: the default corpus stands in
        fwd = corpus_sentences(a.corpus, N_SENTENCES)
        fwd_src = tok_src = os.path.basename(a.corpus) + " (no WSD test sets found)"
        tok_sents = corpus_sentences(a.corpus, 300)
    print(f"forward inputs: the first {len(fwd)} sentences of {fwd_src} (the last two as one pair, segments 0 and 1)")

    ok_all, lines, notes = True, [], []
    # SaBERT's masked LM is the sense-aware head, not BertForMaskedLM's: its encoder alone.
    for name, d, classes in (("bert", a.bert, (BertModel, BertForMaskedLM)), ("sabert", a.sabert, (BertModel,))):
        ls, ns, ok = forward_check(name, d, fwd, a.tol, classes)
        lines += ls
        notes += ns
        ok_all &= ok
    for name, d, auto in (("bert", a.bert, False), ("sabert", a.sabert, False), ("bert", a.bert, True)):
        ls, ok = pieces_check(name, d, tok_sents, tok_src, auto)
        lines += ls
        ok_all &= ok
    ls, ok = pieces_check("bert", a.bert, EDGE_CASES, "built-in edge cases")
    lines += ls
    ok_all &= ok
    for l in lines + notes:
        print(l)
    print(f"transformers check: {'pass' if ok_all else 'FAIL'}")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
