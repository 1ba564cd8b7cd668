#!/usr/bin/env python3
"""Extract a tokenized corpus (one sentence per line) from the HTML of Debian's debian-handbook.

This is SenseAlign's small real default corpus: every Debian machine can install it
(`apt-get install debian-handbook`), so the README's first command needs nothing else.
The same book exists in several languages (en-US, de-DE, es-ES, ja-JP, zh-CN, ...), which the
cross-lingual setting reuses.

Usage: handbook_corpus.py [--lang en-US] [--html-dir DIR] OUT_TRAIN OUT_HELDOUT
Every 20th sentence goes to OUT_HELDOUT. Code listings (<pre>) are dropped; tokens are split
off punctuation by a simple rule (words, numbers and single punctuation marks).
"""
import argparse
import glob
import html.parser
import os
import re
import sys

TOKEN = re.compile(r"\w+(?:[-'’.]\w+)*|[^\w\s]", re.UNICODE)
SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


class TextOf(html.parser.HTMLParser):
    """Collects paragraph text, skipping code, navigation and scripts."""
    SKIP = {"pre", "script", "style", "code", "head", "title"}
    BLOCK = {"p", "li", "dd", "td", "h1", "h2", "h3", "h4", "div", "br", "tr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth_skip = 0
        self.blocks, self.cur = [], []

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.depth_skip += 1
        elif tag in self.BLOCK:
            self.flush()

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.depth_skip = max(0, self.depth_skip - 1)
        elif tag in self.BLOCK:
            self.flush()

    def handle_data(self, data):
        if not self.depth_skip:
            self.cur.append(data)

    def flush(self):
        text = " ".join("".join(self.cur).split())
        if text:
            self.blocks.append(text)
        self.cur = []


def sentences(path):
    p = TextOf()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    p.flush()
    for block in p.blocks:
        for s in SENTENCE_END.split(block):
            toks = TOKEN.findall(s)
            if len(toks) >= 4:
                yield " ".join(toks)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lang", default="en-US")
    ap.add_argument("--html-dir", default="/usr/share/doc/debian-handbook/html")
    ap.add_argument("train")
    ap.add_argument("heldout")
    a = ap.parse_args()
    files = sorted(glob.glob(os.path.join(a.html_dir, a.lang, "*.html")))
    if not files:
        sys.exit(f"handbook_corpus: no HTML under {os.path.join(a.html_dir, a.lang)} "
                 "(install it with: apt-get install debian-handbook)")
    n = 0
    with open(a.train, "w", encoding="utf-8") as tr, open(a.heldout, "w", encoding="utf-8") as ho:
        for path in files:
            for s in sentences(path):
                (ho if n % 20 == 19 else tr).write(s + "\n")
                n += 1
    print(f"handbook_corpus: {n} sentences from {len(files)} pages ({a.lang}) -> {a.train}, {a.heldout}")


if __name__ == "__main__":
    main()
