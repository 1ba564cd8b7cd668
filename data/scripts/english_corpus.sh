#!/usr/bin/env bash
# A larger English corpus for pretraining (about 25M tokens), in bilm-tf's format: one sentence a
# line, tokens split as in the 1B Word Benchmark (Moses' tokenizer.perl rules for English, without
# escaping: "it 's", "don 't", "--", "..."), like ../shared/data/corpus/lm1b-heldout-dev.txt.
#
# Source: public-domain books of Project Gutenberg, as collected by the University of Georgia in
# github.com/rcdm-uga/Gutenberg_Text (formerly DigiUGA/Gutenberg_Text): the English books of 98 much
# read authors, 3,400 files, 1.2 GB, each with Gutenberg's header and licence. The commit is pinned so
# that every run gives the same corpus. Books are taken in turn from each author (in a fixed
# hash order within an author), so no single author dominates, until the training part has TOKENS
# tokens. Every 100th book goes whole to OUT.dev, so no training sentence comes from a held-out book.
#
# Usage: data/scripts/english_corpus.sh OUT [SOURCE]
#   SOURCE: a checkout of that repository or its tarball (.tar.gz); without it the tarball of the
#   pinned commit is downloaded (about 450 MB) into a temporary folder and removed afterwards.
#   TOKENS=N in the environment changes the size of the training part (default 25000000).
# Needs: python3, and curl to download.
set -euo pipefail

REPO=rcdm-uga/Gutenberg_Text
COMMIT=a0b16d35a9851168ce9ac649851c17b7ab08d48e
OUT=${1:?usage: english_corpus.sh OUT [SOURCE]}
SRC=${2:-}
TOKENS=${TOKENS:-25000000}

TMP=
cleanup() { [ -z "$TMP" ] || rm -rf "$TMP"; }
trap cleanup EXIT
if [ -z "$SRC" ] || [ -f "$SRC" ]; then
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/english_corpus.XXXXXX")
  if [ -z "$SRC" ]; then
    SRC=$TMP/src.tar.gz
    echo "english_corpus: downloading $REPO@$COMMIT" >&2
    curl -fL --retry 3 -o "$SRC" "https://codeload.github.com/$REPO/tar.gz/$COMMIT"
  fi
  tar -xzf "$SRC" -C "$TMP"
  [ "$SRC" != "$TMP/src.tar.gz" ] || rm -f "$SRC"
  SRC=$TMP
fi
[ -d "$SRC" ] || { echo "english_corpus: no folder or tarball at $SRC" >&2; exit 2; }
mkdir -p "$(dirname "$OUT")"

python3 - "$SRC" "$OUT" "$TOKENS" <<'PY'
import hashlib
import os
import re
import sys
import unicodedata

src, out, budget = sys.argv[1], sys.argv[2], int(sys.argv[3])

# Files of 4 MiB and more are omnibus editions ("Complete Works", "Compilation of 233 Short Stories")
# that repeat books of the same folder; leaving them out also keeps the corpus the same when the
# source is a mirror that lacks its largest files.
MAX_BYTES = 4 << 20
START = re.compile(r"^\W*\*{3}\s*START OF (?:THE|THIS) PROJECT GUTENBERG.*$|\*END\*?THE SMALL PRINT.*$",
                   re.I | re.M)
END = re.compile(r"^\W*\*{3}\s*END OF (?:THE|THIS) PROJECT GUTENBERG|^\s*End of (?:the |this )?Project Gutenberg",
                 re.I | re.M)
# The 1B benchmark has ASCII quotes and dashes only; "_" marks italics in Gutenberg's plain text.
CHARS = str.maketrans({"“": '"', "”": '"', "„": '"', "‟": '"', "«": '"', "»": '"', "‘": "'", "’": "'",
                       "‚": "'", "‛": "'", "`": "'", "ʼ": "'", "ʻ": "'", "′": "'", "—": " -- ", "―": " -- ",
                       "–": "-", "…": "...", "\u00a0": " ", "_": None})
INVISIBLE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
# Square and curly brackets hold the editors' words: notes, illustrations, footnote and page marks.
BRACKETED = re.compile(r"\[[^\]]*\]|\{[^}]*\}")
# Sentences with these are errata lists, tables, indexes or quotations in other scripts (Greek).
NOT_PROSE = re.compile(r"[*|=<>{}\[\]\\~^#]|[^\x00-\u024f]")
JUNK = re.compile(r"gutenberg|https?:|www\.|@|e-?text|^produced by|^transcriber|copyright", re.I)
HEADING = re.compile(r"(?:CHAPTER|BOOK|PART|VOLUME|SECTION|CANTO|SCENE|ACT)\b")
# Words whose period does not end a sentence (Moses' English nonbreaking prefixes, plus the titles
# and abbreviations of 19th-century books); NUMERIC_ONLY ones only before a number.
NONBREAK = set("""Adj Adm Adv Ald Asst Bart Bldg Brig Bros Capt Cmdr Co Col Comdr Con Corp Cpl Dr Drs Ens
Esq Gen Gov Hon Hosp Insp Jr Lieut Lt Maj Messrs Mlle Mme Mons Mr Mrs Ms Msgr Mt Ph Prof Pvt Rep Rev Rt
Sen Sgt Sr St Ste Supt Surg vs viz cf Ch ch chap Chap Fig fig ed Ed""".split())
NUMERIC_ONLY = {"No", "no", "Nos", "Art", "Nr", "p", "pp", "Vol", "vol"}
BOUNDARY = re.compile(r"""([.!?]+['")\]]*)\s+(?=['"(\[]*[A-Z0-9])""")
INITIALS = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")
LETTER, NONLETTER = r"[^\W\d_]", r"[\W\d_]"
FUNCTION_WORDS = set("the of and to a in that was he it his i with is you had for as her not but at she on be".split())


def body(text):
    """The book between Gutenberg's start and end lines; None for the few files without them."""
    s = START.search(text)
    if not s:
        return None
    e = END.search(text, s.end())
    return text[s.end():e.start() if e else len(text)]


def paragraphs(text):
    for para in re.split(r"\n[ \t]*\n", text):
        lines = [l.strip() for l in para.split("\n") if l.strip()]
        # prose is wrapped near 70 columns; blocks of short lines are verse, contents or indexes
        if not lines or (len(lines) >= 3 and max(len(l) for l in lines) < 55):
            continue
        p = " ".join(BRACKETED.sub(" ", " ".join(lines)).split())
        if p.startswith("["):
            continue  # a note that goes on over several paragraphs
        letters = [c for c in p if c.isalpha()]
        if (not letters or sum(c.isupper() for c in letters) > len(letters) / 2 or HEADING.match(p)
                or JUNK.search(p)):
            continue  # headings, credits, notes about the edition
        yield p


def split_sentences(p):
    out, begin = [], 0
    for m in BOUNDARY.finditer(p):
        punct = m.group(1)
        if punct[0] == "." and not punct.startswith(".."):
            w = p[p.rfind(" ", 0, m.start()) + 1:m.start()].lstrip("\"'([")
            if w in NONBREAK or INITIALS.fullmatch(w) or (len(w) == 1 and w.isalpha() and w != "I"):
                continue
            if w in NUMERIC_ONLY and p[m.end():m.end() + 1].isdigit():
                continue
        out.append(p[begin:m.end(1)])
        begin = m.end()
    out.append(p[begin:])
    return out


def tokenize(s):
    """tokenizer.perl -l en -no-escape, in the order it applies its rules."""
    s = " " + s + " "
    s = re.sub(r"\.{2,}", " ... ", s)
    s = re.sub(r"-{2,}", " -- ", s)
    s = re.sub(r"([^\w\s.',-])", r" \1 ", s)
    s = re.sub(r"(\D),", r"\1 , ", s)
    s = re.sub(r",(\D)", r" , \1", s)
    s = re.sub(rf"({NONLETTER})'(?={NONLETTER})", r"\1 ' ", s)
    s = re.sub(rf"([\W_])'(?={LETTER})", r"\1 ' ", s)
    s = re.sub(rf"({LETTER})'(?={NONLETTER})", r"\1 ' ", s)
    s = re.sub(rf"({LETTER})'(?={LETTER})", r"\1 '", s)
    s = re.sub(r"(\d)'(?=s)", r"\1 '", s)
    words = s.split()
    for i, w in enumerate(words):
        if len(w) > 1 and w.endswith(".") and w != "...":
            pre, nxt = w[:-1], (words[i + 1] if i + 1 < len(words) else "")
            if (("." in pre and re.search(LETTER, pre)) or pre in NONBREAK or (len(pre) == 1 and pre.isupper())
                    or nxt[:1].islower() or (pre in NUMERIC_ONLY and nxt[:1].isdigit())):
                continue
            words[i] = pre + " ."
    return " ".join(words).split()


def book_sentences(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        raw = f.read()
    if "WORLD LIBRARY, INC." in raw:
        return []  # a copyrighted edition that Gutenberg may give out for personal use only
    text = body(raw.replace("\r\n", "\n").replace("\r", "\n"))
    if text is None:
        return []
    text = INVISIBLE.sub("", unicodedata.normalize("NFC", text)).translate(CHARS)
    sents = []
    for p in paragraphs(text):
        for s in split_sentences(p):
            toks = tokenize(s)
            if 4 <= len(toks) <= 200 and any(c.islower() for c in s) and not NOT_PROSE.search(s):
                sents.append(" ".join(toks))
    words = [t.lower() for s in sents for t in s.split() if t[0].isalpha()]
    if not words or sum(w in FUNCTION_WORDS for w in words) < 0.2 * len(words):
        return []  # not English running text (word lists, a book in French or Latin)
    return sents


def books(root):
    """(author folder, path) in the order they are taken: one book of each author in turn."""
    entries = [e for e in sorted(os.listdir(root)) if os.path.isdir(os.path.join(root, e))]
    if len(entries) == 1 and not any(f.endswith(".txt") for f in os.listdir(os.path.join(root, entries[0]))):
        yield from books(os.path.join(root, entries[0]))  # the tarball's top folder
        return
    by_author = []
    for a in entries:
        d = os.path.join(root, a)
        # Widger's "Quotations from the Project Gutenberg Editions" are excerpts of the other books
        files = [f for f in os.listdir(d) if f.endswith(".txt") and "Quotations from the Project Gutenberg" not in f
                 and os.path.getsize(os.path.join(d, f)) < MAX_BYTES]
        files.sort(key=lambda f: hashlib.sha1(f"{a}/{f}".encode()).hexdigest())
        if files:
            by_author.append([os.path.join(d, f) for f in files])
    for i in range(max(map(len, by_author), default=0)):
        for files in by_author:
            if i < len(files):
                yield files[i]


seen = set()
n_books = n_skipped = 0
counts = {"train": [0, 0], "dev": [0, 0]}
with open(out, "w", encoding="utf-8") as train, open(out + ".dev", "w", encoding="utf-8") as dev:
    for path in books(src):
        if counts["train"][1] >= budget:
            break
        new = []
        for s in book_sentences(path):
            key = hashlib.blake2b(s.encode(), digest_size=8).digest()
            if key not in seen:  # editions of one book, and books in two folders, repeat sentences
                seen.add(key)
                new.append(s)
        if not new:
            n_skipped += 1
            continue
        part = "dev" if n_books % 100 == 99 else "train"
        (dev if part == "dev" else train).write("".join(s + "\n" for s in new))
        counts[part][0] += len(new)
        counts[part][1] += sum(s.count(" ") + 1 for s in new)
        n_books += 1
if n_books == 0:
    sys.exit(f"english_corpus: no Gutenberg books found under {src}")
print(f"english_corpus: {n_books} books ({n_skipped} skipped as duplicates or not English prose); "
      f"{counts['train'][0]} sentences, {counts['train'][1]} tokens -> {out}; "
      f"{counts['dev'][0]} sentences, {counts['dev'][1]} tokens -> {out}.dev", file=sys.stderr)
PY
