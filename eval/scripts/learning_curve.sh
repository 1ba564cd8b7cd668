#!/usr/bin/env bash
# One run's learning curve: trains RUN_DIR in stages up to each point (a rerun of bin/train resumes
# the run; only n_steps changes) and evaluates the checkpoint written there:
#   - WSD (bin/wsd_eval, the four settings, every layer from one pass) appended to RUN_DIR/wsd.jsonl;
#   - pseudo-word purity (bin/senses pseudo-eval, sense models only) appended to RUN_DIR/purity.jsonl;
#   - held-out perplexity: the run logs it at every point (heldout_every divides the points).
# Rerunning the same command skips the points already evaluated and resumes the training.
# `bin/runs plot RUN_DIR... -o curves.svg` draws the curves; eval/scripts/curve_table.py tabulates them.
#
# Usage: eval/scripts/learning_curve.sh CONFIG RUN_DIR "STEP STEP ..." [--set key=value ...]
# Environment: SEMCOR (unified XML, from `bin/wsd_eval convert-semcor`), WSD_TESTS (the test
# sets' .data.xml, space-separated), PAIRS (pseudo-word pair files, space-separated; empty: no
# purity), PURITY_CORPUS (the unmerged text pseudo-eval reads), WORDNET (index.sense), CKPT_EVERY
# (a checkpoint every that many steps inside a stage too, so a killed stage resumes near where it
# stopped; by default only at the points).
set -euo pipefail
cfg=${1:?usage: learning_curve.sh CONFIG RUN_DIR \"STEP ...\" [--set key=value ...]}
run=${2:?run directory}
points=${3:?steps at which to evaluate}
shift 3
: "${SEMCOR:?set SEMCOR to the unified SemCor XML}" "${WSD_TESTS:?set WSD_TESTS to the test sets}"
PAIRS=${PAIRS:-}
WORDNET=${WORDNET:-/usr/share/wordnet/index.sense}
tests=()
for t in $WSD_TESTS; do tests+=(--test "$t"); done

# The points already evaluated: the steps wsd.jsonl holds.
done_steps() { [ -f "$run/wsd.jsonl" ] && python3 -c 'import json,sys; print(" ".join(sorted({str(json.loads(l)["step"]) for l in open(sys.argv[1]) if l.strip()})))' "$run/wsd.jsonl" || true; }

for step in $points; do
  if [[ " $(done_steps) " == *" $step "* ]]; then echo "learning_curve: step $step already evaluated"; continue; fi
  ./bin/train "$cfg" --set run_dir="$run" --set n_steps="$step" --set checkpoint_every="${CKPT_EVERY:-$step}" "$@"
  [ -f "$run/checkpoints/$(printf "ckpt-%08d.safetensors" "$step")" ] ||
    { echo "learning_curve: no checkpoint at step $step in $run/checkpoints" >&2; exit 1; }
  ./bin/wsd_eval --model "$run" --train "$SEMCOR" "${tests[@]}" --layer 0,1,2 --all-settings --wordnet "$WORDNET" \
    --out "$run/wsd-keys" --log "$run/wsd.jsonl" | grep -E "ALL|layer|appended"
  for p in $PAIRS; do
    # Purity of the selected senses, forward and backward, as one JSON line.
    ./bin/senses pseudo-eval --model "$run" --pairs "$p" --corpus "$PURITY_CORPUS" |
      python3 -c '
import json, re, sys
out = {"step": int(sys.argv[1]), "pairs": sys.argv[2]}
for line in sys.stdin:
    m = re.match(r"mean (forward|backward): purity ([0-9.]+) \(one-sense baseline ([0-9.]+)\), V-measure ([0-9.]+)", line)
    if m:
        out[m[1]] = {"purity": float(m[2]), "baseline": float(m[3]), "v": float(m[4])}
assert "forward" in out and "backward" in out, "pseudo-eval printed no mean purity"
print(json.dumps(out))' "$step" "$(basename "$p")" >> "$run/purity.jsonl"
    tail -1 "$run/purity.jsonl"
  done
done
