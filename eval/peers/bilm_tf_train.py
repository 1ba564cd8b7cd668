#!/usr/bin/env python3
"""Time bilm-tf's own training graph (bilm.training, unedited, via bilm_tf_shim) on CPU.

Usage: bilm_tf_train.py --options OPTIONS.json --vocab VOCAB.txt --corpus FILE --steps N
                        [--warmup W=5] [--threads T=2] [--seed S]

The graph is the one bilm.training.train() builds for one tower: LanguageModel(options, True)
under scope 'lm', gradients of loss * unroll_steps (EXPERIMENTAL_TREE aggregation), bilm's
average_gradients and clip_grads (global norm, all_clip_norm_val), Adagrad (lr from options,
default 0.2, initial accumulator 1.0). Batches come from bilm.data.BidirectionalLMDataset
(shuffle_on_load, as bin/train_elmo.py), the LSTM state carried between batches as train() does.
Not run: train()'s TensorBoard summaries and checkpoints (logging only, same update).

Prints a loss line every few steps, then as the last two lines `tokens_per_s X` (batch_size *
unroll_steps per timed step, each token counted once for both directions, as the PyTorch peer)
and `peak_rss_mib Y`, after a line with the timed wall and process CPU seconds. W warm-up steps run before the clock starts; graph build is outside it.
"""
import argparse
import json
import os
import random
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bilm_tf_shim import load  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument('--options', required=True)
p.add_argument('--vocab', required=True)
p.add_argument('--corpus', required=True)
p.add_argument('--steps', type=int, required=True)
p.add_argument('--warmup', type=int, default=5)
p.add_argument('--threads', type=int, default=2)
p.add_argument('--seed', type=int, default=None)
a = p.parse_args()
if a.steps < 1 or a.warmup < 0 or a.threads < 1:
    p.error('--steps and --threads must be at least 1, --warmup at least 0')

tf, bilm = load(threads=a.threads)
# What bench's peer line shows.
import importlib.metadata  # noqa: E402
print(f"version bilm {importlib.metadata.version('bilm')}, tensorflow {tf.__version__ if hasattr(tf, '__version__') else importlib.metadata.version('tensorflow')}", flush=True)
from bilm.training import (LanguageModel, average_gradients, clip_grads,  # noqa: E402
                           _get_feed_dict_from_X, load_vocab)
from bilm.data import BidirectionalLMDataset  # noqa: E402

with open(a.options) as f:
    options = json.load(f)
char_inputs = 'char_cnn' in options
vocab = load_vocab(a.vocab, options['char_cnn']['max_characters_per_token'] if char_inputs else None)
# train_elmo.py sets n_tokens_vocab from the vocabulary; a different value would make the
# softmax table disagree with the ids the data yields
if options.get('n_tokens_vocab', vocab.size) != vocab.size:
    sys.exit(f"options n_tokens_vocab {options['n_tokens_vocab']} != vocab size {vocab.size}")
options['n_tokens_vocab'] = vocab.size
if not options.get('bidirectional', False):
    print('warning: options are not bidirectional; timing one direction', file=sys.stderr)

if a.seed is not None:
    # bilm.data shuffles with `random`; the graph's initializers and sampler use TF's seed
    random.seed(a.seed)
    np.random.seed(a.seed)
    tf.set_random_seed(a.seed)

B, T = options['batch_size'], options['unroll_steps']
t_build = time.perf_counter()
# as train(): everything on /cpu:0, one tower under 'lm'
with tf.device('/cpu:0'):
    global_step = tf.get_variable('global_step', [], initializer=tf.constant_initializer(0),
                                  trainable=False)
    lr = options.get('learning_rate', 0.2)
    opt = tf.train.AdagradOptimizer(learning_rate=lr, initial_accumulator_value=1.0)
    with tf.variable_scope('lm'):
        model = LanguageModel(options, True)
        loss = model.total_loss
        grads = opt.compute_gradients(loss * options['unroll_steps'],
                                      aggregation_method=tf.AggregationMethod.EXPERIMENTAL_TREE)
    grads = average_gradients([grads], B, options)
    grads, _ = clip_grads(grads, options, False, global_step)
    train_op = opt.apply_gradients(grads, global_step=global_step)
    init = tf.global_variables_initializer()

n_params = sum(int(np.prod(v.shape.as_list())) for v in tf.trainable_variables())
data = BidirectionalLMDataset(a.corpus, vocab, test=False, shuffle_on_load=True)
config = tf.ConfigProto(allow_soft_placement=True, intra_op_parallelism_threads=a.threads,
                        inter_op_parallelism_threads=a.threads)
bidirectional = options.get('bidirectional', False)
with tf.Session(config=config) as sess:
    sess.run(init)
    # zero initial states, fetched as train() does
    feed = {model.tokens_characters if char_inputs else model.token_ids:
            np.zeros([B, T] + ([options['char_cnn']['max_characters_per_token']] if char_inputs else []),
                     dtype=np.int32 if char_inputs else np.int64)}
    if bidirectional:
        feed[model.tokens_characters_reverse if char_inputs else model.token_ids_reverse] = \
            next(iter(feed.values()))
    state_values = sess.run(model.init_lstm_state, feed_dict=feed)
    print(f'graph built in {time.perf_counter() - t_build:.1f}s; vocab {vocab.size} '
          f'params {n_params}', flush=True)

    batches = data.iter_batches(B, T)
    every = max(1, (a.warmup + a.steps) // 10)
    t0 = None
    for step in range(1, a.warmup + a.steps + 1):
        if step == a.warmup + 1:
            t0, c0 = time.perf_counter(), time.process_time()
        X = next(batches)
        feed = {t: v for t, v in zip(model.init_lstm_state, state_values)}
        feed.update(_get_feed_dict_from_X(X, 0, B, model, char_inputs, bidirectional))
        ret = sess.run([train_op, loss] + model.final_lstm_state, feed_dict=feed)
        state_values = ret[2:]
        if step % every == 0 or step == a.warmup + a.steps:
            print(f'step {step} loss {ret[1]:.4f} perplexity {np.exp(ret[1]):.1f}', flush=True)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0

# CPU seconds too: wall time alone misleads when other jobs share the cores
print(f'timed_steps {a.steps} wall_s {dt:.2f} cpu_s {cpu:.2f} ({cpu / dt:.2f} cores busy)')
print(f'tokens_per_s {B * T * a.steps / dt:.1f}')
print(f'peak_rss_mib {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}')
