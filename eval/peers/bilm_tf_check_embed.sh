#!/usr/bin/env bash
# Embeddings of our exported ELMo against bilm-tf's own dump_bilm_embeddings, stateless and
# stateful: train bench-small 20 steps on 2,000 Brown lines, export, embed 200 other Brown lines
# both ways, compare. Fails when a max abs difference exceeds TOL (default 1e-5).
# Without ../shared/data, the default corpus's lines stand in for Brown's.
#   eval/peers/bilm_tf_check_embed.sh [WORKDIR=build/peers-check/bilm-tf-embed]
set -euo pipefail
cd "$(dirname "$0")/../.."
W=${1:-build/peers-check/bilm-tf-embed}
TOL=${TOL:-1e-5}
P=build/peers/bilm-tf/bin/python
BROWN=../shared/data/corpus/brown.txt
[ -f $BROWN ] || BROWN=build/corpus/handbook-en.train.txt
mkdir -p "$W"
head -2000 $BROWN > "$W/corpus.txt"
sed -n 2001,2200p $BROWN > "$W/sents.txt"
rm -rf "$W/run" "$W/export"
./bin/train configs/bench-small.cfg --set train_prefix="$W/corpus.txt" --set run_dir="$W/run" --set n_steps=20 \
  --set heldout_prefix= >"$W/train.log"
./bin/export --model "$W/run" --output "$W/export" >"$W/export.log"
E="$W/export"
fail=0
for mode in stateless stateful; do
  # bilm-tf runs one sentence per batch, carrying row 0's state: our --stateful --batch-size 1
  ours=(); theirs=(--stateless)
  [ $mode = stateful ] && ours=(--stateful --batch-size 1) && theirs=()
  ./bin/embed --options $E/options.json --weights $E/weights.hdf5 --vocab $E/vocab.txt \
    --input "$W/sents.txt" --output "$W/ours_$mode.hdf5" "${ours[@]}" >"$W/ours_$mode.log"
  $P eval/peers/bilm_tf_embed.py --options $E/options.json --weights $E/weights.hdf5 \
    --vocab $E/vocab.txt --input "$W/sents.txt" --output "$W/tf_$mode.hdf5" "${theirs[@]}" 2>"$W/tf_$mode.err"
  out=$($P eval/peers/bilm_tf_compare.py "$W/ours_$mode.hdf5" "$W/tf_$mode.hdf5") || fail=1
  d=$(echo "$out" | awk '/^max_abs_diff/ {print $2}')
  verdict=FAIL
  [ -n "$d" ] && awk -v d="$d" -v t="$TOL" 'BEGIN {exit !(d <= t)}' && verdict=pass || fail=1
  echo "bilm-tf embeddings, $mode (BidirectionalLanguageModel's dump_bilm_embeddings vs bin/embed ${ours[*]}):" \
    "max abs diff ${d:-?} over 3 layers x $(wc -l <"$W/sents.txt") sentences: $verdict (<= $TOL)"
done
[ $fail = 0 ] || exit 1
