#!/usr/bin/env python3
"""Extract a tokenized German corpus (one sentence per line) from Debian's manpages-de.

Each page under /usr/share/man/de is rendered by man(1) with very wide lines (one paragraph per
line), and only body paragraphs are kept: section headings, option lines (starting with "-"),
the SIEHE AUCH / ÜBERSETZUNG / AUTOR sections (names, URLs and boilerplate that every page
repeats) and sentences seen before are dropped. Sentences are split and tokenized by the rules of
handbook_corpus.py, so both German sources look alike.

Usage: manpages_corpus.py [--man-dir DIR] OUT_TRAIN OUT_HELDOUT   (every 20th sentence: held out)
Needs: apt-get install manpages-de man-db
"""
import argparse
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from handbook_corpus import SENTENCE_END, TOKEN  # noqa: E402

SKIP_SECTIONS = {"SIEHE AUCH", "ÜBERSETZUNG", "AUTOR", "AUTOREN", "FEHLER MELDEN", "COPYRIGHT", "KOLOPHON",
                 "ÜBERSICHT", "BEZEICHNUNG"}
HEADING = re.compile(r"^[A-ZÄÖÜ][A-ZÄÖÜ0-9 /_-]+$")


def paragraphs(page):
    env = dict(os.environ, MANWIDTH="4000", LC_ALL="C.UTF-8")
    r = subprocess.run(["man", "--no-hyphenation", "--no-justification", "-l", page], env=env,
                       capture_output=True, text=True, errors="replace")
    section = ""
    for line in r.stdout.splitlines():
        line = re.sub(r".\x08", "", line)  # overstrike bold/underline, in case col(1) is missing
        if not line.strip():
            continue
        if not line.startswith(" "):
            if HEADING.match(line.strip()):
                section = line.strip()
            continue  # headings and the page header/footer
        text = line.strip()
        if section in SKIP_SECTIONS or text.startswith("-") or "@" in text or "://" in text:
            continue
        yield text


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--man-dir", default="/usr/share/man/de")
    ap.add_argument("train")
    ap.add_argument("heldout")
    a = ap.parse_args()
    pages = sorted(glob.glob(os.path.join(a.man_dir, "man*", "*")))
    if not pages:
        sys.exit(f"manpages_corpus: no pages under {a.man_dir} (install them with: apt-get install manpages-de)")
    seen, n = set(), 0
    with open(a.train, "w", encoding="utf-8") as tr, open(a.heldout, "w", encoding="utf-8") as ho:
        for page in pages:
            for para in paragraphs(page):
                for s in SENTENCE_END.split(para):
                    toks = TOKEN.findall(s)
                    while toks and toks[0] in ("*", "•", "·", "+"):  # list bullets
                        toks = toks[1:]
                    line = " ".join(toks)
                    if len(toks) < 4 or line in seen:
                        continue
                    seen.add(line)
                    (ho if n % 20 == 19 else tr).write(line + "\n")
                    n += 1
    print(f"manpages_corpus: {n} sentences from {len(pages)} pages ({a.man_dir}) -> {a.train}, {a.heldout}")


if __name__ == "__main__":
    main()
