#!/usr/bin/env bash
# The paper's zero-shot NER protocol on both taggers over the same frozen vectors: Flair's
# SequenceTagger (eval/peers/flair_ner.py over sensealign.flair) beside our `bin/xling_eval ner`.
# Trains (or reuses) a small Joint-ELMo over English, German and Spanish Wikipedia, then trains
# each tagger on English CoNLL-2003 with the same runs and epochs, picks the best English-dev
# epoch, and tests on German (CoNLL-2003 deu.testa) and Spanish (CoNLL-2002 esp.testa). Both sides'
# predictions are scored by conlleval.pl, so the F1s are measured identically. One line a language:
#   flair vs xling_eval ner, de: 12.30 ± 1.00 vs 11.80 ± 0.90 F1 (5 runs, 2 epochs)
# Exits nonzero when either side fails (and says which); skips (exit 0) without ../shared/data or
# the Flair venv.
#
# Usage: eval/peers/flair_ner.sh [WORKDIR]   (default build/peers/flair_ner)
# Needs: `make` (bin/train, bin/xling_eval), `make python` (bin/sensealign), `make peers`
# (build/peers/flair). Environment: STEPS (joint model's training steps, default 450: about 8
# minutes on 2 busy cores), EPOCHS (default 2), RUNS (5), SEED (first seed, 0), LAYERS (all, top
# or average; ours: concat, top, average), THREADS (CPU threads of each side, default 1: on a
# shared 2-core machine two threads that wait on each other ran Flair's batches 5x and our
# engine's embedding 4x slower than one), TRAIN_SENTENCES and DEV_SENTENCES (default all: the
# protocol; N: both sides train on, or choose on, the first N sentences of eng.train / eng.testa,
# when the CPU time allows no more; the test sets are always whole).
# A rerun with the same WORKDIR and STEPS reuses the trained model and our cached vectors; the
# taggers are trained again, unless REUSE_TAGGERS=1: then Flair's saved best models tag the test
# sets again and our side's last predictions are rescored (both only where they exist).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
data=../shared/data
py=build/peers/flair/bin/python
steps=${STEPS:-450}
epochs=${EPOCHS:-2}
runs=${RUNS:-5}
seed=${SEED:-0}
layers=${LAYERS:-all}
threads=${THREADS:-1}
train=$data/ner/conll2003/eng.train
dev=$data/ner/conll2003/eng.testa
de=$data/ner/conll2003/deu.testa
es=$data/ner/conll2002/esp.testa
conlleval=$data/ner/conlleval.pl

for f in "$train" "$dev" "$de" "$es" "$conlleval" "$data/corpus/wiki-en.txt" "$data/corpus/wiki-de.txt" \
  "$data/corpus/wiki-es.txt"; do
  [ -f "$f" ] || { echo "flair ner check: skipped: $f is missing (../shared/data is not here)"; exit 0; }
done
"$py" -c 'import flair, torch' 2>/dev/null ||
  { echo "flair ner check: skipped: $py cannot import flair and torch (make peers: build/peers/flair)"; exit 0; }
for f in bin/train bin/xling_eval bin/sensealign/__init__.py; do
  [ -e "$f" ] || { echo "flair ner check: $f is missing (run make and make python)"; exit 2; }
done
command -v perl >/dev/null || { echo "flair ner check: perl is missing (conlleval.pl needs it)"; exit 2; }
case $layers in
  all) ours_layers=concat ;;
  top | average) ours_layers=$layers ;;
  *) echo "flair ner check: LAYERS must be all, top or average (the modes both sides share)"; exit 2 ;;
esac

work=${1:-build/peers/flair_ner}
mkdir -p "$work"
work=$(cd "$work" && pwd)
start=$SECONDS

# The joint model. bin/train globs without brace expansion, so the two second languages are one
# directory's *.txt (links to the corpora).
model=$work/joint-en-de-es
mkdir -p "$work/l2"
for l in de es; do ln -sfn "$(cd "$data/corpus" && pwd)/wiki-$l.txt" "$work/l2/wiki-$l.txt"; done
t=$SECONDS
./bin/train configs/joint-elmo-small.cfg --set train_prefix="$data/corpus/wiki-en.txt" \
  --set "train_prefix_l2=$work/l2/*.txt" --set heldout_prefix= --set n_steps="$steps" \
  --set checkpoint_every="$steps" --set heldout_every="$steps" --set log_every=50 \
  --set run_dir="$model" >>"$work/joint-en-de-es.train.log" 2>&1 ||
  { echo "flair ner check: training the joint model failed:"; tail -5 "$work/joint-en-de-es.train.log"; exit 1; }
echo "flair ner check: joint model $model ($steps steps of configs/joint-elmo-small.cfg; en + de/es) ready in $((SECONDS - t)) s"

# first N FILE OUT: the first N sentences (a blank line ends one; -DOCSTART- lines are no sentence).
first() {
  awk -v n="$1" '/^[ \t]*$/ { if (in_s) { s++; in_s = 0 } print; if (s >= n) exit; next }
                 $1 != "-DOCSTART-" { in_s = 1 } { print }' "$2" >"$3"
}
mkdir -p "$work/data"
if [ -n "${TRAIN_SENTENCES:-}" ]; then
  first "$TRAIN_SENTENCES" "$train" "$work/data/eng.train.first$TRAIN_SENTENCES"
  train=$work/data/eng.train.first$TRAIN_SENTENCES
fi
if [ -n "${DEV_SENTENCES:-}" ]; then
  first "$DEV_SENTENCES" "$dev" "$work/data/eng.testa.first$DEV_SENTENCES"
  dev=$work/data/eng.testa.first$DEV_SENTENCES
fi
echo "flair ner check: train $train, dev $dev, $runs runs of $epochs epochs, $threads thread(s) a side"

export OMP_NUM_THREADS=$threads
common=(--model "$model" --train "$train" --dev "$dev" --runs "$runs" --seed "$seed" --max-epochs "$epochs")

status=0
failed=()
reuse=()
[ "${REUSE_TAGGERS:-}" = 1 ] && reuse=(--reuse)
t=$SECONDS
rm -rf "$work/flair/pred"
PYTHONPATH=bin "$py" eval/peers/flair_ner.py "${common[@]}" --test de="$de" --test es="$es" --layers "$layers" \
  --threads "$threads" ${reuse[@]+"${reuse[@]}"} --work "$work/flair" 2>"$work/flair.log" | tee "$work/flair.out" ||
  { status=1; failed+=(flair); echo "flair ner check: Flair's side failed:"; tail -5 "$work/flair.log"; }
echo "flair ner check: Flair's side took $((SECONDS - t)) s (log: $work/flair.log)"

# Ours also tags English dev as a test set (en-dev) so that conlleval.pl scores every row of both.
t=$SECONDS
if [ "${REUSE_TAGGERS:-}" = 1 ] && [ -f "$work/xling/ner.json" ] && [ -f "$work/xling/pred/es.run$runs.txt" ]; then
  echo "flair ner check: REUSE_TAGGERS=1: rescoring xling_eval's last predictions ($work/xling/pred)"
else
  rm -rf "$work/xling/pred"
  mkdir -p "$work/xling"
  ./bin/xling_eval ner "${common[@]}" --test en-dev="$dev" --test de="$de" --test es="$es" --layers "$ours_layers" \
    --jobs "$threads" --cache "$work/xling-cache" --out "$work/xling/ner.json" --predictions "$work/xling/pred" \
    2>"$work/xling.log" | tee "$work/xling.out" ||
    { status=1; failed+=(xling_eval); echo "flair ner check: xling_eval's side failed:"; tail -5 "$work/xling.log"; }
fi
echo "flair ner check: xling_eval's side took $((SECONDS - t)) s (log: $work/xling.log)"

if [ $status -ne 0 ]; then
  echo "flair ner check: FAILED: ${failed[*]} ($((SECONDS - start)) s in all)"
  exit 1
fi

# Scores both sides' prediction files with conlleval.pl, checks ours against xling_eval's own
# scorer, and prints the comparison.
"$py" - "$work" "$conlleval" "$runs" "$epochs" <<'EOF' || status=1
import json, os, re, statistics, subprocess, sys

work, script, runs, epochs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

def fb1(path):
    with open(path, "rb") as f:
        out = subprocess.run(["perl", script, "-d", " "], stdin=f, capture_output=True, check=True).stdout.decode()
    return float(re.search(r"FB1:\s*([0-9.]+)", out).group(1))

def ms(xs):
    return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)

ours_json = json.load(open(os.path.join(work, "xling", "ner.json")))
ok = True
for lang in ("en-dev", "de", "es"):
    flair = [fb1(os.path.join(work, "flair", "pred", f"{lang}.run{k}.txt")) for k in range(1, runs + 1)]
    ours = [fb1(os.path.join(work, "xling", "pred", f"{lang}.run{k}.txt")) for k in range(1, runs + 1)]
    # Our C++ scorer must agree with the Perl script (it reports F1 in percent or as a fraction).
    own = [r["test"][lang] for r in ours_json["runs"]]
    own = [x * 100 if max(own) <= 1 else x for x in own]
    if any(abs(a - b) > 0.011 for a, b in zip(own, ours)):
        print(f"flair ner check: xling_eval's own F1 for {lang} {own} differs from conlleval.pl's {ours}")
        ok = False
    (fm, fs), (om, os_) = ms(flair), ms(ours)
    print(f"flair vs xling_eval ner, {lang}: {fm:.2f} ± {fs:.2f} vs {om:.2f} ± {os_:.2f} F1 "
          f"({runs} runs, {epochs} epochs; runs {', '.join(f'{x:.2f}' for x in flair)} vs "
          f"{', '.join(f'{x:.2f}' for x in ours)})")
sys.exit(0 if ok else 1)
EOF
echo "flair ner check: $((SECONDS - start)) s in all"
exit $status
