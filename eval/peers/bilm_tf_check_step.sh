#!/usr/bin/env bash
# Our ELMo training steps against bilm-tf's own training graph: trains bench-small sizes (dropout 0,
# no state resets) with SA_DUMP_STEPS and a checkpoint per step, then eval/peers/bilm_tf_step.py
# runs the same steps (same weights, batches, negatives and expected counts) in bilm.training's
# graph and compares step 1's loss, gradients, weights and accumulators and the loss curves.
# A second, one-step run of the same seed with learning_rate 1e4 gives step 1's gradient to
# float32 precision (at lr 0.2 small gradients hide in the weights' rounding; see bilm_tf_step.py).
# Also printed: each step run from our checkpoint before it (its loss checked), and TF against its
# own trajectory (rerun, and from weights one ulp off) to size float32 divergence over the steps.
# The 50-step loss curves are checked in float64 (ours with precision = "f64", bilm-tf's graph
# built in float64): in float32 the first steps amplify rounding past the tolerance (TF against
# itself: 5e-6 to 1.1e-4 between runs), so the float32 curves are printed beside their reference
# lines, not checked.
#
# Usage: eval/peers/bilm_tf_check_step.sh [WORKDIR]   (default build/peers/bilm_tf_step)
# Needs: bin/train (make all), build/peers/bilm-tf (make peers). Corpus: the first 3000 lines of
# ../shared/data/corpus/brown.txt, else of build/corpus/handbook-en.train.txt (make corpus).
# Environment: STEPS (default 50), THREADS (default 2), TOL (1e-5), CURVE_TOL (1e-4).
# Prints bilm_tf_step.py's `bilm-tf` lines; exits nonzero when a check fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-build/peers/bilm_tf_step}
steps=${STEPS:-50}
threads=${THREADS:-2}
who="bilm-tf step check"
. eval/peers/step_check_setup.sh

# dump NAME STEPS [--set ...]: a fresh run (a resumed one would dump nothing) into WORK/NAME-run,
# its steps into WORK/NAME-dump
dump() {
  local name=$1 n=$2
  shift 2
  rm -rf "$work/$name-dump" "$work/$name-run"
  SA_DUMP_STEPS="$work/$name-dump" ./bin/train configs/bench-small.cfg --set train_prefix="$work/corpus.txt" \
    --set run_dir="$work/$name-run" --set n_steps="$n" --set heldout_prefix= --set dropout=0 \
    --set state_reset=0 --set checkpoint_every=1 --set keep_checkpoints=$((n + 1)) --set log_every="$n" "$@" \
    >"$work/$name.train.log" 2>&1 ||
    { echo "bilm-tf step check: training $name failed:"; tail -5 "$work/$name.train.log"; exit 1; }
}
dump steps "$steps"
dump grad 1 --set learning_rate=1e4
dump f64 "$steps" --set precision=f64
echo "bilm-tf step check: dumped $steps steps in float32 and float64 (and the lr 1e4 step) from $(basename "$src") in $((SECONDS - start)) s"

rc=0
# run_step LOG ARGS...: bilm_tf_step.py's lines; rc keeps the worst exit status
run_step() {
  local log=$1 r=0
  shift
  "$py" eval/peers/bilm_tf_step.py --steps "$steps" --threads "$threads" --tol "${TOL:-1e-5}" \
    --curve-tol "${CURVE_TOL:-1e-4}" "$@" 2>"$work/$log" | grep -v '^USING SKIP' || r=$?
  [ "$r" -le 1 ] || { echo "bilm-tf step check: bilm_tf_step.py failed ($r):"; tail -5 "$work/$log"; }
  [ "$r" -le "$rc" ] || rc=$r
}
run_step bilm_tf_step.log --dump "$work/steps-dump" --run "$work/steps-run" --grad-dump "$work/grad-dump" \
  --grad-run "$work/grad-run" --per-step --reference --curve-unchecked
run_step bilm_tf_step_f64.log --f64 --dump "$work/f64-dump" --run "$work/f64-run" --per-step --reference
echo "bilm-tf step check: $((SECONDS - start)) s in all"
exit "$rc"
