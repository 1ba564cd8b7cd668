# Sourced by the one-step checks against TensorFlow graphs (bilm_tf_check_step.sh,
# saelmo_released_check.sh) after they set `who` (their message prefix), `work` and `threads`:
# checks bin/train and the bilm-tf environment, writes WORK/corpus.txt (the first 3000 lines of
# Brown, else of the default corpus) and sets py, src, OMP_NUM_THREADS and start.
py=build/peers/bilm-tf/bin/python
[ -x bin/train ] || { echo "$who: bin/train is missing (run make all)"; exit 2; }
[ -x "$py" ] || { echo "$who: $py is missing (run make peers)"; exit 2; }
src=../shared/data/corpus/brown.txt
[ -f "$src" ] || src=build/corpus/handbook-en.train.txt
[ -f "$src" ] || { echo "$who: neither ../shared/data/corpus/brown.txt nor $src (run make corpus)"; exit 2; }
mkdir -p "$work"
work=$(cd "$work" && pwd)
head -3000 "$src" >"$work/corpus.txt"
export OMP_NUM_THREADS=$threads
start=$SECONDS
