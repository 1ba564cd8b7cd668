#!/usr/bin/env bash
# Runs on the GPU machine from the repository root: unpacks the bundle next to this script,
# puts its libraries and the machine's CUDA libraries (pip's nvidia-* packages) on the path,
# then runs one job. Usage: tests/gpu/run_on_gpu.sh BUNDLE_DIR tests|sanitize|profile|report|bf16|elmo-vs-saelmo|hf-check|quick|gpu-tests|curve-seeds [OUTDIR]
# The device tool brings back at most 8 files: past that, the logs come back packed in logs.tar.gz.
set -uo pipefail
bundle=$(cd "${1:?bundle dir}" && pwd); job=${2:?job}; out=${3:-${OUT:-gpu-out}}
mkdir -p "$out" "$bundle/x"
tar -C "$bundle/x" -xJf "$bundle/bundle.tar.xz" || exit 1
libs="$bundle/x/lib:/usr/local/cuda/lib64"
for d in $(python3 -c 'import nvidia, os; [print(os.path.join(p, d, "lib")) for p in nvidia.__path__ for d in sorted(os.listdir(p))]' 2>/dev/null); do
  [ -d "$d" ] && libs="$libs:$d"
done
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p bin && cp -f "$bundle"/x/bin/* bin/
# The tests read ../shared/data; give them the bundle's subset where nothing is there.
[ -e ../shared/data ] || { mkdir -p ../shared && ln -s "$bundle/x/data" ../shared/data; }
# WordNet's index at the path the tools default to, where the machine has none.
[ -e /usr/share/wordnet/index.sense ] || { mkdir -p /usr/share/wordnet && ln -sf "$bundle/x/data/wordnet/index.sense" /usr/share/wordnet/; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$out/bench-ops.log"
for b in bin/*; do [ -x "$b" ] && [ "${b##*.}" != so ] && { ldd "$b" | grep -q "not found" && { echo "MISSING LIBS in $b:"; ldd "$b" | grep "not found"; }; }; done
step() { local t=$1 log=$2; shift 2; echo "== $* (limit ${t}s)" | tee -a "$out/$log"; timeout "$t" "$@" >>"$out/$log" 2>&1; echo "== exit $?" | tee -a "$out/$log"; tail -4 "$out/$log"; }
corpus=../shared/data/corpus/brown.txt
run_tests() {
  step ${T_TESTS:-180} tests.log ./bin/tests
  grep -E "^\[  (FAILED|PASSED) |tests? (ran|passed)" "$out/tests.log" | tail -40
}
# compute-sanitizer over the CUDA tests (memcheck, racecheck), where the machine has the tool
# (the toolkit's, or pip's nvidia-cuda-sanitizer-api) and its driver lets it attach.
sanitize_cuda() {
  local cs
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer \
    $(python3 -c 'import nvidia, os; [print(os.path.join(p, "cuda_sanitizer_api", "compute-sanitizer", "compute-sanitizer")) for p in nvidia.__path__]' 2>/dev/null) 2>/dev/null | head -1)
  if [ -z "$cs" ] || [ ! -x "$cs" ]; then echo "compute-sanitizer: skipped (not found on this machine)" | tee -a "$out/sanitizer.log"; return; fi
  for tool in ${TOOLS:-memcheck racecheck}; do
    step ${T_SAN:-240} sanitizer.log "$cs" --tool $tool --error-exitcode 3 ./bin/tests --gtest_filter='CudaOps*:*Cuda*:*Gpu*'
    if grep -q "Device not supported" "$out/sanitizer.log"; then
      echo "compute-sanitizer: skipped (the driver answers \"Device not supported\", as on gVisor machines)" | tee -a "$out/sanitizer.log"
      return
    fi
  done
}
hf_check() {
  # BERT-tiny trained briefly on the GPU, exported to the Hugging Face layout, loaded by
  # transformers (the machine's pip packages): every hidden state and the MLM logits against ours.
  n=${STEPS:-300}
  step ${T_TRAIN:-300} hf.log ./bin/train configs/bert-tiny.cfg --set run_dir=runs/gpu-bert-tiny --set n_steps=$n \
    --set device=cuda --set precision=${PRECISION:-tf32} --set checkpoint_every=$n --set heldout_every=$n --set warmup_steps=$((n / 10))
  step 60 hf.log ./bin/export --model runs/gpu-bert-tiny --output runs/gpu-bert-tiny-hf
  step 180 hf.log python3 tests/gpu/hf_reference.py runs/gpu-bert-tiny-hf
  export SA_HF_CHECK_DIR=runs/gpu-bert-tiny-hf
  step 120 hf.log ./bin/tests --gtest_filter='Bert.ExportedRunMatchesTransformers'
  cp runs/gpu-bert-tiny/metrics.jsonl "$out/bert-tiny-metrics.jsonl"
}
# bench_runs LOG EXTRA SPEC...: `bench train` for each SPEC "config steps precision [--set k=v ...]",
# EXTRA (e.g. --phases, or "") appended, into LOG.
bench_runs() {
  local log=$1 extra=$2 spec cfg n p
  shift 2
  for spec in "$@"; do
    set -- $spec
    cfg=$1 n=$2 p=$3
    shift 3
    # SaELMo's tables (2 x 758 MiB) take longer to set up and to checkpoint at the end.
    local t=${T_RATE:-45}
    [[ $cfg == saelmo* ]] && t=${T_RATE_SENSE:-90}
    step $t $log ./bin/bench train --config configs/$cfg --corpus $corpus --device cuda --steps $n --peer "" \
      --set precision=$p "$@" $extra
  done
}
# The training rates the goals name, bf16 first, then tf32 beside them, then the switches still
# off by default, each beside the tf32 rates above (15 runs: the quick job must fit one call):
# the LSTM's directions each on a stream of its own (SA_LSTM_STREAMS=1), its step loops as CUDA
# graphs (SA_CUDA_GRAPHS=1), the batch's uploads on a copy stream (SA_COPY_STREAM=1), and whole
# steps recorded as graphs (SA_CUDA_GRAPHS=step), a step captured once and replayed (SA_STEP_REPLAY=1),
# and elmo.cfg at a quarter of its batch.
rates() {
  bench_runs bench-train.log "" "elmo.cfg 20 bf16" "saelmo.cfg 20 bf16 --set contextual_warmup=2" "bert-tiny.cfg 40 bf16" \
    "elmo.cfg 20 tf32" "bert-tiny.cfg 40 tf32" "saelmo.cfg 20 tf32 --set contextual_warmup=2"
  echo "== SA_LSTM_STREAMS=1" >> "$out/bench-train.log"
  SA_LSTM_STREAMS=1 bench_runs bench-train.log "" "elmo.cfg 20 tf32"
  echo "== SA_CUDA_GRAPHS=1" >> "$out/bench-train.log"
  SA_CUDA_GRAPHS=1 bench_runs bench-train.log "" "elmo.cfg 20 tf32" "saelmo.cfg 20 tf32 --set contextual_warmup=2"
  echo "== SA_COPY_STREAM=1" >> "$out/bench-train.log"
  SA_COPY_STREAM=1 bench_runs bench-train.log "" "elmo.cfg 20 tf32"
  echo "== SA_CUDA_GRAPHS=step" >> "$out/bench-train.log"
  SA_CUDA_GRAPHS=step bench_runs bench-train.log "" "elmo.cfg 20 tf32" "saelmo.cfg 20 tf32 --set contextual_warmup=2" \
    "bert-tiny.cfg 40 bf16"
  # The step captured once as a CUDA graph and replayed (its char-CNN tokens padded to the batch's, so
  # every step has the captured shapes).
  echo "== SA_STEP_REPLAY=1" >> "$out/bench-train.log"
  SA_STEP_REPLAY=1 bench_runs bench-train.log "" "elmo.cfg 20 tf32 --set char_tokens_bucket=10240"
  # A quarter of the batch with the LSTM loops as graphs (few launches queue): a step near a quarter
  # of the full one says the device's work bounds it; near the same, the host or the launches.
  echo "== SA_CUDA_GRAPHS=1, a quarter of the batch" >> "$out/bench-train.log"
  SA_CUDA_GRAPHS=1 bench_runs bench-train.log "" "elmo.cfg 20 tf32 --set batch_size=64"
  grep -E "^== |tokens/s|launches|host reads|host per step|periodic sense work|graphs|uploads over|replay" "$out/bench-train.log" | tail -100
}
# The tests that need a GPU (140 at the last count; the rest ran on the development machine). The
# failures, each with its messages, go to tests-failed.log: the end of the output may not hold them.
gpu_tests() {
  step ${T_TESTS:-120} tests.log ./bin/tests --gtest_filter='*Cuda*:*Gpu*:*GPU*:*cuda*:*gpu*'
  awk '/^\[ RUN/{buf=""} {buf=buf $0 "\n"} /^\[  FAILED  \] [A-Za-z]/ && !/ms\)$/{next} /^\[  FAILED  \].*ms\)$/{printf "%s", buf}' \
    "$out/tests.log" > "$out/tests-failed.log"
  grep -E "^\[  (FAILED|PASSED) |tests? (ran|passed)" "$out/tests.log" | tail -20
}
# Learning-curve seeds (eval/scripts/learning_curve.sh) of ELMo and SaELMo at saelmo-small's sizes,
# all at once on the one GPU (small batches leave it mostly idle): SEEDS x the two models, each
# trained to the POINTS steps on the merged English corpus carried as CURVE_CORPUS (.xz), evaluated
# there; their logs come back in curves.tar.gz. Stragglers are stopped at CURVE_S seconds.
curve_seeds() {
  local corpus=/tmp/english-merged.txt d=../shared/data pids=() m s
  xz -dc "${CURVE_CORPUS:?the merged corpus, .xz}" > $corpus || return
  export SEMCOR=$bundle/x/data/wsd/semcor.data.xml PURITY_CORPUS=$d/corpus/brown.txt OMP_NUM_THREADS=2 \
    WSD_TESTS="$d/wsd/eval/senseval2/senseval2.data.xml $d/wsd/eval/semeval2007/semeval2007.data.xml"
  for s in ${SEEDS:-1 2 3}; do
    for m in elmo saelmo; do
      local sets=(--set train_prefix=$corpus --set heldout_every=391 --set seed=$s --set device=cuda)
      [ $m = elmo ] && sets+=(--set n_context=0)
      PAIRS=$([ $m = saelmo ] && echo "eval/data/pseudo_pairs_pos.txt eval/data/pseudo_pairs.txt") \
        eval/scripts/learning_curve.sh configs/saelmo-small.cfg runs/curve-$m-s$s "${POINTS:-782 3128}" "${sets[@]}" \
        > "$out/curve-$m-s$s.log" 2>&1 &
      pids+=($!)
    done
  done
  local deadline=$((SECONDS + ${CURVE_S:-240}))
  alive() { local p; for p in "${pids[@]}"; do kill -0 $p 2>/dev/null && return 0; done; return 1; }
  while [ $SECONDS -lt $deadline ] && alive; do sleep 2; done
  for p in "${pids[@]}"; do kill -- $p 2>/dev/null && echo "curve-seeds: stopped $p at the deadline"; done
  pkill -f "bin/(train|wsd_eval|senses)" 2>/dev/null
  tar -czf "$out/curves.tar.gz" runs/curve-*/{metrics,wsd,purity}.jsonl runs/curve-*/config.cfg "$out"/curve-*.log 2>/dev/null
  rm -f "$out"/curve-*.log
  tar -tzf "$out/curves.tar.gz" | head -40
}
case "$job" in
tests) run_tests ;;
sanitize) sanitize_cuda ;;
profile)
  # The second call of a short lease: the CUDA tests, the rates, where a step's time goes (each
  # phase waits for the device), the ops, then memcheck where the machine allows it.
  gpu_tests
  rates
  bench_runs bench-phases.log --phases "elmo.cfg 20 tf32" "elmo.cfg 20 bf16" "saelmo.cfg 20 tf32 --set contextual_warmup=2" \
    "bert-tiny.cfg 40 tf32"
  # A quarter of the batch: near the same step time means the host (or launches) bounds the step,
  # a quarter of it that the device does.
  bench_runs bench-phases.log "" "elmo.cfg 20 tf32 --set batch_size=64" "bert-tiny.cfg 40 tf32 --set batch_size=32"
  step 75 bench-ops.log ./bin/bench ops --device cuda
  T_SAN=${T_SAN:-150} TOOLS=memcheck sanitize_cuda
  ;;
report)
  run_tests
  step 75 bench-ops.log ./bin/bench ops --device cuda
  step 45 bench-train.log ./bin/bench train --config configs/bench-small.cfg --corpus $corpus --device cuda --steps 40 --peer ""
  step 45 bench-train.log ./bin/bench train --config configs/saelmo-small.cfg --corpus $corpus --device cuda --steps 40 --peer "" --set contextual_warmup=2
  step 60 bench-train.log ./bin/bench train --config configs/elmo.cfg --corpus $corpus --device cuda --steps 20 --peer "" --set precision=tf32
  # the same with both directions stacked into one batched GEMM per step (lstm.cudnn = "stacked")
  step 60 bench-train.log ./bin/bench train --config configs/elmo.cfg --corpus $corpus --device cuda --steps 20 --peer "" --set precision=tf32 --set lstm.cudnn=stacked
  step 60 bench-train.log ./bin/bench train --config configs/saelmo.cfg --corpus $corpus --device cuda --steps 20 --peer "" --set precision=tf32 --set contextual_warmup=2
  ;;
bf16)
  # The paper's sizes and BERT-tiny with bf16 matrix products, BERT-tiny with tf32 beside it.
  T_RATE=${T_RATE:-60} bench_runs bench-bf16.log "" "elmo.cfg 20 bf16" "saelmo.cfg 20 bf16 --set contextual_warmup=2" \
    "bert-tiny.cfg 40 tf32" "bert-tiny.cfg 40 bf16"
  ;;
elmo-vs-saelmo)
  # Paper sizes, an equal token budget (both unroll 20), the sense schedule scaled to it. One call
  # of at most 10 minutes holds one model of ~6 minutes: MODELS=elmo, then MODELS=saelmo.
  # STEPS for ~6 minutes: 360 s x the rate `report` or `bf16` measured / 5,120 tokens a step.
  n=${STEPS:-1500}; w=$((n / 3)); d=../shared/data; e=$d/wsd/eval
  common="--set n_steps=$n --set precision=${PRECISION:-tf32} --set device=cuda --set heldout_every=$n --set checkpoint_every=$n --set unroll_steps=20 --set seed=${SEED:-1}"
  for m in ${MODELS:-elmo saelmo}; do
    sense=""
    [ "$m" = saelmo ] && sense="--set contextual_warmup=$w --set prune_first=$((2 * w)) --set prune_every=$w"
    step ${T_TRAIN:-300} $m.log ./bin/train configs/$m.cfg --set run_dir=runs/gpu-$m $common $sense
    cp runs/gpu-$m/metrics.jsonl "$out/$m-metrics.jsonl"
    step ${T_WSD:-120} wsd.log ./bin/wsd_eval --model runs/gpu-$m --train $d/wsd/semcor.data.xml --test $e/senseval2/senseval2.data.xml \
      --test $e/semeval2007/semeval2007.data.xml --all-settings --wordnet $d/wordnet/index.sense --device cuda
  done
  grep -h heldout_perplexity "$out"/*-metrics.jsonl | tail -2
  ;;
hf-check) hf_check ;;
gpu-tests) gpu_tests ;;
curve-seeds) curve_seeds ;;
tests-and-seeds)
  # The GPU tests and the learning-curve seeds side by side (the seeds' small steps leave the GPU
  # mostly idle; the tests check results, not times).
  curve_seeds &
  seeds=$!
  gpu_tests
  wait $seeds
  ;;
quick)
  # One call for a short lease: the CUDA tests alone, the rates, where elmo.cfg's step goes, a
  # shorter Hugging Face check.
  gpu_tests
  rates
  bench_runs bench-phases.log --phases "elmo.cfg 20 tf32"
  # The kernels written without a GPU since the last lease: the LSTM on two streams, the conv's
  # tiled weight gradient and bf16 forward, device negatives, tensor-core attention, broadcasts
  # as rows.
  step 75 bench-ops.log ./bin/bench ops --device cuda --only elementwise,lstm,char_cnn,negatives,attention
  # Where the host's time goes in an elmo.cfg step (gperftools' profile of the timed steps; read
  # here with google-pprof --text bin/bench FILE against the same bundle's binaries).
  bench_runs bench-profile.log "--profile $out/elmo-host.prof" "elmo.cfg 20 tf32"
  STEPS=${STEPS:-100} T_TRAIN=${T_TRAIN:-60} hf_check
  # racecheck over the CUDA tests in what is left of the call (QUICK_S, default 570 s).
  left=$(( ${QUICK_S:-570} - SECONDS - 10 ))
  if [ $left -gt 30 ]; then T_SAN=$left TOOLS=racecheck sanitize_cuda; else echo "racecheck: no time left ($left s)"; fi
  ;;
*) echo "unknown job $job"; exit 2 ;;
esac
# At most 8 files come back: past that, every log goes back in one archive.
if [ "$(find "$out" -maxdepth 1 -type f | wc -l)" -gt 8 ]; then
  (cd "$out" && tar -czf logs.tar.gz ./*.log && rm -f ./*.log)
  echo "logs packed in $out/logs.tar.gz"
fi
