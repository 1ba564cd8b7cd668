#!/usr/bin/env python3
"""Segment Chinese or Japanese text into dictionary words by forward maximum matching.

Why: ../shared/data/corpus/wiki-{ja,zh}.txt are split into single characters ("#" marks the
original spaces), while dictionaries (MUSE, CC-CEDICT, EDICT) list words of several characters.
A word can only be translated if it is a token of the corpus, so both sides must segment alike.
We segment every run of CJK characters greedily, longest lexicon word first (up to --max-len
characters); a character in no lexicon word stays alone. Other text (Latin words, numbers,
punctuation) is tokenized as handbook_corpus.py does.

The lexicon is the headwords of a monolingual-side dictionary that is not the evaluation
dictionary: CC-CEDICT (traditional and simplified forms) for Chinese, EDICT (kanji and kana
forms, EUC-JP) for Japanese. Optionally also the target words of a MUSE training file, minus
the source ranks held out for development (--muse-skip-ranks 4000:5000), so the held-out
pairs never shape the tokenization.

Usage: segment_cjk.py (--cedict F | --edict F) [--muse F --muse-skip-ranks A:B] [--char-split]
                      IN OUT
--char-split: IN is the wiki format (characters separated by spaces, "#" = original space).
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from handbook_corpus import TOKEN  # noqa: E402

CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u30fc々〆"
CJK_RUN = re.compile(f"[{CJK}]+")
ONLY_CJK = re.compile(f"^[{CJK}]+$")


def cedict_words(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                continue
            parts = line.split(" ", 2)
            if len(parts) >= 2:
                yield parts[0]
                yield parts[1]


def edict_words(path):
    with open(path, encoding="euc_jp", errors="replace") as f:
        for line in f:
            head = line.split("/", 1)[0].strip()
            word, _, kana = head.partition(" ")
            yield word
            kana = kana.strip("[] ")
            if kana:
                yield kana


def muse_words(path, skip):
    ranks, words = {}, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            p = line.split()
            if len(p) != 2:
                continue
            r = ranks.setdefault(p[0], len(ranks))
            if not (skip[0] <= r < skip[1]):
                words.append(p[1])
    return words


def segment_run(run, lexicon, max_len):
    out, i = [], 0
    while i < len(run):
        for n in range(min(max_len, len(run) - i), 0, -1):
            if n == 1 or run[i:i + n] in lexicon:
                out.append(run[i:i + n])
                i += n
                break
    return out


def segment_line(line, lexicon, max_len, char_split):
    chunks = ["".join(c.split()) for c in line.split("#")] if char_split else line.split()
    toks = []
    for chunk in chunks:
        pos = 0
        for m in CJK_RUN.finditer(chunk):
            toks += TOKEN.findall(chunk[pos:m.start()])
            toks += segment_run(m.group(), lexicon, max_len)
            pos = m.end()
        toks += TOKEN.findall(chunk[pos:])
    return toks


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cedict")
    ap.add_argument("--edict")
    ap.add_argument("--muse")
    ap.add_argument("--muse-skip-ranks", default="4000:5000")
    ap.add_argument("--max-len", type=int, default=8)
    ap.add_argument("--char-split", action="store_true")
    ap.add_argument("input")
    ap.add_argument("output")
    a = ap.parse_args()
    if not (a.cedict or a.edict):
        sys.exit("segment_cjk: give a lexicon: --cedict FILE or --edict FILE")
    lexicon = set()
    if a.cedict:
        lexicon.update(cedict_words(a.cedict))
    if a.edict:
        lexicon.update(edict_words(a.edict))
    if a.muse:
        lo, hi = (int(x) for x in a.muse_skip_ranks.split(":"))
        lexicon.update(muse_words(a.muse, (lo, hi)))
    lexicon = {w for w in lexicon if 1 < len(w) <= a.max_len and ONLY_CJK.match(w)}
    n, n_tok = 0, 0
    with open(a.input, encoding="utf-8") as f, open(a.output, "w", encoding="utf-8") as out:
        for line in f:
            toks = segment_line(line, lexicon, a.max_len, a.char_split)
            if toks:
                out.write(" ".join(toks) + "\n")
                n += 1
                n_tok += len(toks)
    print(f"segment_cjk: {n} lines, {n_tok} tokens, lexicon of {len(lexicon)} words -> {a.output}")


if __name__ == "__main__":
    main()
