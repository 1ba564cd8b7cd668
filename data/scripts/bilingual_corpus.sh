#!/bin/sh
# The small en-de setting of the cross-lingual work, as shards for train_prefix globs:
#   build/corpus/en-de/en/*.txt  Brown + Wikipedia (../shared/data) + Debian's handbook (en-US)
#   build/corpus/en-de/de/*.txt  Wikipedia (../shared/data) + Debian's handbook (de-DE)
#   build/corpus/en-de/heldout-{en,de}.txt
# Usage: data/scripts/bilingual_corpus.sh [SHARED_DATA_DIR]   (default ../shared/data)
set -e
S=${1:-../shared/data}/corpus
O=build/corpus/en-de
mkdir -p "$O/en" "$O/de"
cp "$S/brown.txt" "$S/wiki-en.txt" "$O/en/"
cp "$S/wiki-de.txt" "$O/de/"
cp "$S/lm1b-heldout-dev.txt" "$O/heldout-en.txt"
python3 data/scripts/handbook_corpus.py --lang en-US "$O/en/handbook.txt" "$O/handbook-heldout-en.txt"
python3 data/scripts/handbook_corpus.py --lang de-DE "$O/de/handbook.txt" "$O/heldout-de.txt"
wc -l "$O"/en/*.txt "$O"/de/*.txt
