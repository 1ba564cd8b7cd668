#!/usr/bin/env bash
# One SaELMo training step of ours against the paper's released TensorFlow code (sa_elmo, the
# bilm-tf fork of "Towards Multi-Sense Cross-Lingual Alignment of Contextual Embeddings"): trains
# saelmo-small sizes 3 steps with the released rules (dropout 0, no state resets, a one-step
# warm-up, uniform sense-row negatives, the released center EMA) with SA_DUMP_STEPS and a checkpoint
# per step, reruns step STEP (default 2, the first with the real senses) from its checkpoint at
# learning_rate 1e4 (a copy of the run holding only that checkpoint, learning_rate raised in its
# config.cfg and options.json: the step's gradient to float32 precision), then
# eval/peers/saelmo_released_step.py runs the step in the released graph and compares the chosen
# senses, the loss, every gradient, the update, the centers and the LSTM states.
#
# Usage: SA_ELMO=DIR eval/peers/saelmo_released_check.sh [WORKDIR]   (default build/peers/saelmo_released)
# SA_ELMO: the released `sa_elmo` folder, e.g. from a clone of ntunlp/multisense_embedding_alignment:
#   git -C CLONE archive HEAD sa_elmo | tar -x -C /tmp     (then SA_ELMO=/tmp/sa_elmo)
# Without it the check prints `skipped` and succeeds. Its bilm/training.py imports scikit-learn:
# `make peers` installs it in build/peers/bilm-tf (else SKLEARN_PATH=DIR, a pip --target folder).
# Environment: STEP (2), THREADS (2), TOL (1e-5).
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-build/peers/saelmo_released}
step=${STEP:-2}
threads=${THREADS:-2}
if [ -z "${SA_ELMO:-}" ] || [ ! -f "${SA_ELMO}/bilm/util.py" ]; then
  echo "skipped: SA_ELMO is not the released sa_elmo folder (see eval/peers/saelmo_released_check.sh)"
  exit 0
fi
who="saelmo-released check"
. eval/peers/step_check_setup.sh
n=$((step + 1))

rm -rf "$work/dump" "$work/run" "$work/grad-dump" "$work/grad-run"
SA_DUMP_STEPS="$work/dump" ./bin/train configs/saelmo-small.cfg --set train_prefix="$work/corpus.txt" \
  --set run_dir="$work/run" --set n_steps=$n --set heldout_prefix= --set dropout=0 --set state_reset=0 \
  --set checkpoint_every=1 --set keep_checkpoints=$((n + 1)) --set log_every=$n --set contextual_warmup=1 \
  --set sense_negatives=uniform --set sense_negative_budget=rows --set center_update=released \
  >"$work/train.log" 2>&1 || { echo "saelmo-released check: training failed:"; tail -5 "$work/train.log"; exit 1; }

grad=()
if [ "$step" -gt 1 ]; then
  # step STEP again from ckpt-(STEP-1) at learning_rate 1e4: a resumed copy of the run
  mkdir -p "$work/grad-run/checkpoints"
  cp "$work/run/config.cfg" "$work/run/options.json" "$work/run/vocab.txt" "$work/grad-run/"
  cp "$work/run/checkpoints/ckpt-$(printf %08d $((step - 1))).safetensors" "$work/grad-run/checkpoints/"
  sed -i 's/^learning_rate = .*/learning_rate = 10000.0/' "$work/grad-run/config.cfg"
  "$py" -c 'import json, sys; p = sys.argv[1]; o = json.load(open(p)); o["learning_rate"] = 1e4; json.dump(o, open(p, "w"), indent=2)' \
    "$work/grad-run/options.json"
  SA_DUMP_STEPS="$work/grad-dump" ./bin/train "$work/grad-run/config.cfg" --set run_dir="$work/grad-run" \
    --set n_steps=$step >"$work/grad.train.log" 2>&1 ||
    { echo "saelmo-released check: the lr 1e4 rerun failed:"; tail -5 "$work/grad.train.log"; exit 1; }
  grad=(--grad-dump "$work/grad-dump" --grad-run "$work/grad-run")
fi
echo "saelmo-released check: dumped $n steps (and step $step at lr 1e4) from $(basename "$src") in $((SECONDS - start)) s"

extra=()
[ -n "${SKLEARN_PATH:-}" ] && extra=(--pythonpath "$SKLEARN_PATH")
rc=0
"$py" eval/peers/saelmo_released_step.py --released "$SA_ELMO" --dump "$work/dump" --run "$work/run" \
  --step "$step" "${grad[@]}" "${extra[@]}" --threads "$threads" --tol "${TOL:-1e-5}" \
  2>"$work/saelmo_released_step.log" | grep -v '^USING SKIP' || rc=$?
[ "$rc" -le 1 ] || { echo "saelmo-released check: saelmo_released_step.py failed ($rc):"; tail -5 "$work/saelmo_released_step.log"; }
echo "saelmo-released check: $((SECONDS - start)) s in all"
exit "$rc"
