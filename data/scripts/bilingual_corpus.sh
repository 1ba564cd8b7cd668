#!/bin/sh
# The small bilingual settings of the cross-lingual work, as shards for train_prefix globs:
#   build/corpus/en-XX/en/*.txt   Brown + Wikipedia (../shared/data) + Debian's handbook (en-US)
#   build/corpus/en-XX/XX/*.txt   Wikipedia (../shared/data) + Debian's handbook in XX
#                                 (+ German manual pages from manpages-de for XX = de)
#   build/corpus/en-XX/heldout-{en,XX}.txt
# Chinese and Japanese: wiki-{zh,ja} come split into characters, the handbook in unsegmented
# runs; both are segmented into dictionary words by segment_cjk.py (forward maximum matching
# with CC-CEDICT or EDICT headwords plus the MUSE training targets outside the held-out source
# ranks 4000-4999), so MUSE/CEDICT/EDICT entries of several characters match corpus tokens.
# Usage: data/scripts/bilingual_corpus.sh [de|es|ja|zh] [SHARED_DATA_DIR]   (default: de ../shared/data)
# Needs: debian-handbook, manpages-de (de), edict (ja); `make deps` installs them.
set -e
L=${1:-de}
D=${2:-../shared/data}
S=$D/corpus
O=build/corpus/en-$L
HERE=$(dirname "$0")
mkdir -p "$O/en" "$O/$L"
cp "$S/brown.txt" "$S/wiki-en.txt" "$O/en/"
cp "$S/lm1b-heldout-dev.txt" "$O/heldout-en.txt"
python3 "$HERE/handbook_corpus.py" --lang en-US "$O/en/handbook.txt" "$O/handbook-heldout-en.txt"
case $L in
  de)
    cp "$S/wiki-de.txt" "$O/de/"
    python3 "$HERE/handbook_corpus.py" --lang de-DE "$O/de/handbook.txt" "$O/heldout-de.txt"
    python3 "$HERE/manpages_corpus.py" "$O/de/manpages.txt" "$O/manpages-heldout-de.txt" ;;
  es)
    cp "$S/wiki-es.txt" "$O/es/"
    python3 "$HERE/handbook_corpus.py" --lang es-ES "$O/es/handbook.txt" "$O/heldout-es.txt" ;;
  ja|zh)
    if [ "$L" = ja ]; then LEX="--edict /usr/share/edict/edict"; BOOK=ja-JP
    else LEX="--cedict $D/dict/cedict_ts.u8"; BOOK=zh-CN; fi
    LEX="$LEX --muse $D/dict/muse/en-$L.train.txt --muse-skip-ranks 4000:5000"
    python3 "$HERE/segment_cjk.py" $LEX --char-split "$S/wiki-$L.txt" "$O/$L/wiki-$L.txt"
    python3 "$HERE/handbook_corpus.py" --lang $BOOK "$O/handbook-raw.txt" "$O/handbook-heldout-raw.txt"
    python3 "$HERE/segment_cjk.py" $LEX "$O/handbook-raw.txt" "$O/$L/handbook.txt"
    python3 "$HERE/segment_cjk.py" $LEX "$O/handbook-heldout-raw.txt" "$O/heldout-$L.txt"
    rm "$O/handbook-raw.txt" "$O/handbook-heldout-raw.txt" ;;
  *) echo "bilingual_corpus.sh: unknown language '$L' (expected de, es, ja or zh)" >&2; exit 2 ;;
esac
wc -l "$O"/en/*.txt "$O/$L"/*.txt
