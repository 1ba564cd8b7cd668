#!/usr/bin/env bash
# Our BERT and SaBERT exports against Hugging Face transformers (the torch peer of `make peers`):
# trains a small BERT and a small SaBERT briefly on the default corpus, exports each with
# bin/export, then eval/peers/transformers_check.py compares every hidden state (and BERT's MLM
# logits) with what transformers computes on the same ids, and BertTokenizerFast's pieces with ours
# on the WSD test sets. One line per check; exits nonzero when one fails.
#
# Usage: eval/peers/transformers_check.sh [WORKDIR]   (default build/peers/transformers_check)
# Needs: `make all python` (bin/train, bin/export, the sensealign module), `make corpus`, `make peers`
# (build/peers/torch). Environment: BERT_STEPS, SABERT_STEPS (training steps, default 300 and 150:
# about a minute each on 2 idle cores, several when they are busy), TOL (default 1e-5), WSD_TESTS
# (the .data.xml files; default ../shared/data/wsd/eval/*/*.data.xml; none: the corpus stands in).
# A rerun with the same WORKDIR resumes the finished runs (nothing to train) and redoes the rest.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-build/peers/transformers_check}
mkdir -p "$work"
work=$(cd "$work" && pwd)
py=build/peers/torch/bin/python
bert_steps=${BERT_STEPS:-300}
sabert_steps=${SABERT_STEPS:-150}
corpus=build/corpus/handbook-en.train.txt

for f in bin/train bin/export bin/sensealign/__init__.py; do
  [ -e "$f" ] || { echo "transformers check: $f is missing (run make all python)"; exit 2; }
done
[ -f "$corpus" ] || { echo "transformers check: $corpus is missing (run make corpus)"; exit 2; }
"$py" -c 'import transformers, torch' 2>/dev/null ||
  { echo "transformers check: $py cannot import transformers and torch (run make peers)"; exit 2; }
start=$SECONDS

# train NAME CONFIG STEPS [--set ...]: a brief run into WORKDIR/NAME-STEPS (its own directory per
# step count: a resumed run must keep its warm-up), exported to WORKDIR/NAME-hf.
train() {
  local name=$1 cfg=$2 n=$3
  shift 3
  ./bin/train "$cfg" --set run_dir="$work/$name-$n" --set n_steps="$n" --set warmup_steps=$((n / 5)) \
    --set checkpoint_every="$n" --set heldout_every="$n" --set log_every="$n" "$@" >"$work/$name.train.log" 2>&1 ||
    { echo "transformers check: training $name failed:"; tail -5 "$work/$name.train.log"; exit 1; }
  ./bin/export --model "$work/$name-$n" --output "$work/$name-hf" >"$work/$name.export.log" 2>&1 ||
    { echo "transformers check: exporting $name failed:"; tail -5 "$work/$name.export.log"; exit 1; }
}
train bert configs/bert-small.cfg "$bert_steps"
# The sense-aware head from a third of the way on, so that its gradients reach the encoder.
train sabert configs/sabert-small.cfg "$sabert_steps" --set contextual_warmup=$((sabert_steps / 3))
echo "transformers check: trained and exported bert ($bert_steps steps) and sabert ($sabert_steps steps) in $((SECONDS - start)) s"

if [ -n "${WSD_TESTS+x}" ]; then
  read -r -a wsd <<<"$WSD_TESTS"
else
  wsd=()
  for f in ../shared/data/wsd/eval/*/*.data.xml; do [ -f "$f" ] && wsd+=("$f"); done
fi
status=0
PYTHONPATH=bin "$py" eval/peers/transformers_check.py --bert "$work/bert-hf" --sabert "$work/sabert-hf" \
  --work "$work" --corpus "$corpus" --tol "${TOL:-1e-5}" ${wsd[@]+--wsd "${wsd[@]}"} || status=$?
echo "transformers check: $((SECONDS - start)) s in all"
exit $status
