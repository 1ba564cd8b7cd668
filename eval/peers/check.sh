#!/usr/bin/env bash
# make peers-check: our models against the reference implementations that `make peers` installed,
# one check after another; each prints its lines with its figures. A check that fails is named
# with its log and the others still run; the last line counts them.
#   eval/peers/check.sh [WORK_DIR]        (default build/peers-check)
set -u
cd "$(dirname "$0")/../.."
WORK=${1:-build/peers-check}
mkdir -p "$WORK"
passed=0 failed=0 skipped=0
names=()

run_check() {  # NAME COMMAND...: its output to WORK/NAME.log, its result lines to the console
  local name=$1; shift
  local log=$WORK/$name.log
  echo "== $name"
  "$@" >"$log" 2>&1
  local rc=$?
  # A check's result lines start with its peer's name; a skip says "skipped".
  grep -E '^(bilm-tf|saelmo-released|transformers|flair|torch|python|skipped)|^[0-9]+ (passed|failed)' "$log" | sed 's/^/  /'
  if [ $rc -eq 0 ] && grep -q '^skipped' "$log"; then skipped=$((skipped + 1))
  elif [ $rc -eq 0 ]; then passed=$((passed + 1))
  else failed=$((failed + 1)); names+=("$name"); echo "  $name: FAILED (exit $rc; log $log):"; tail -5 "$log" | sed 's/^/    /'
  fi
}

peer() { [ -x "build/peers/$1/bin/python" ]; }
skip() { echo "skipped: $*"; }

if peer bilm-tf; then
  run_check bilm-tf-embed eval/peers/bilm_tf_check_embed.sh "$WORK/bilm-tf-embed"
  run_check bilm-tf-step eval/peers/bilm_tf_check_step.sh "$WORK/bilm-tf-step"
  # The paper's released SaELMo code is not on PyPI: SA_ELMO names a checkout's sa_elmo folder.
  run_check saelmo-released eval/peers/saelmo_released_check.sh "$WORK/saelmo-released"
else run_check bilm-tf skip "build/peers/bilm-tf is missing: make peers"; fi
if peer torch; then
  run_check transformers eval/peers/transformers_check.sh "$WORK/transformers"
  run_check torch-module env PYTHONPATH=bin build/peers/torch/bin/python -m pytest -q -p no:cacheprovider tests/python/test_torch_elmo.py
else run_check transformers skip "build/peers/torch is missing: make peers"; fi
if peer flair; then
  run_check flair-module env PYTHONPATH=bin build/peers/flair/bin/python -m pytest -q -p no:cacheprovider tests/python/test_flair_embeddings.py
  # A CPU-sized protocol by default (the first 3,000 English training sentences, 2 epochs, 5 runs);
  # TRAIN_SENTENCES= DEV_SENTENCES= EPOCHS=150 runs the paper's.
  run_check flair-ner env TRAIN_SENTENCES="${TRAIN_SENTENCES-3000}" DEV_SENTENCES="${DEV_SENTENCES-1000}" \
    EPOCHS="${EPOCHS:-2}" eval/peers/flair_ner.sh "$WORK/flair-ner"
else run_check flair skip "build/peers/flair is missing: make peers"; fi

echo "peers-check: $passed passed, $failed failed, $skipped skipped${names[*]:+ (failed: ${names[*]})}"
[ $failed -eq 0 ]
