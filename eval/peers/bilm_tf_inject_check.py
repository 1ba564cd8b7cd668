#!/usr/bin/env python3
"""Check that bilm_tf_shim.feed_sampled_values reproduces bilm-tf's own sampled softmax: build
bilm.training.LanguageModel twice (tiny sizes, dropout 0), once with TF's sampler and once fed,
give both the same weights and batch, feed graph B the negatives graph A's sampler drew, and
compare the losses and the Adagrad update train() would make.

Usage: bilm_tf_inject_check.py   (prints `loss_diff X`, `update_max_abs_diff Y`, `ok`/`MISMATCH`)
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bilm_tf_shim import feed_sampled_values, load, log_uniform_expected_count  # noqa: E402

tf, bilm = load(threads=1)
import bilm.training as bt  # noqa: E402

B, T, S, V, MAXC = 4, 5, 16, 60, 50
opts = {'bidirectional': True, 'dropout': 0.0, 'all_clip_norm_val': 10.0, 'n_epochs': 1,
        'n_train_tokens': 1000, 'batch_size': B, 'n_tokens_vocab': V, 'unroll_steps': T,
        'n_negative_samples_batch': S,
        'char_cnn': {'activation': 'relu', 'embedding': {'dim': 4}, 'filters': [[1, 8], [2, 8]],
                     'max_characters_per_token': MAXC, 'n_characters': 261, 'n_highway': 1},
        'lstm': {'cell_clip': 3, 'dim': 16, 'n_layers': 2, 'proj_clip': 3, 'projection_dim': 8,
                 'use_skip_connections': True}}
rng = np.random.RandomState(0)
X = {k: rng.randint(0, 261, (B, T, MAXC)).astype(np.int32)
     for k in ('tokens_characters', 'tokens_characters_reverse')}
X.update({k: rng.randint(0, V, (B, T)).astype(np.int32)
          for k in ('next_token_id', 'next_token_id_reverse')})
real_tf = bt.tf


def build(fed):
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(1)
        bt.tf = real_tf
        made = feed_sampled_values(bt) if fed else None
        opt = tf.train.AdagradOptimizer(0.2, initial_accumulator_value=1.0)
        with tf.variable_scope('lm'):
            m = bt.LanguageModel(opts, True)
            grads = opt.compute_gradients(m.total_loss * T)
        grads, _ = bt.clip_grads(bt.average_gradients([grads], B, opts), opts, False, None)
        train_op = opt.apply_gradients(grads)
        init = tf.global_variables_initializer()
    bt.tf = real_tf
    sess = tf.Session(graph=g)
    sess.run(init)
    return g, sess, m, train_op, made


ga, sa, ma, opa, _ = build(False)
gb, sb, mb, opb, made = build(True)
with ga.as_default():
    weights = {v.name: v.eval(sa) for v in tf.trainable_variables()}
    samplers = [op.outputs for op in ga.get_operations() if op.type == 'LogUniformCandidateSampler']
with gb.as_default():
    for v in tf.trainable_variables():
        v.load(weights[v.name], sb)
fa = bt._get_feed_dict_from_X(X, 0, B, ma, True, True)
loss_a, sampled = sa.run([ma.total_loss, samplers], feed_dict=fa)
fb = bt._get_feed_dict_from_X(X, 0, B, mb, True, True)
for (ids, t_exp, s_exp), (ph_ids, ph_t, ph_s) in zip(sampled, made):
    fb[ph_ids], fb[ph_t], fb[ph_s] = ids, t_exp, s_exp
# TF's own counts against the formula (the sampler's tries are not an output; find them)
labels = X['next_token_id'].reshape(-1)
tries = next((n for n in range(S, 100 * S)
              if np.array_equal(log_uniform_expected_count(sampled[0][0], S, n, V), sampled[0][2])), None)
if tries is not None:
    print(f'forward sampler: {tries} tries; true counts from the formula differ by '
          f'{np.abs(log_uniform_expected_count(labels, S, tries, V) - sampled[0][1].reshape(-1)).max():.3g}')
else:
    print('forward sampler: no tries count reproduces TF expected counts exactly')
loss_b = sb.run(mb.total_loss, feed_dict=fb)
print(f'loss {loss_a:.7f} vs fed {loss_b:.7f}; loss_diff {abs(loss_a - loss_b):.3g}')
# one step each with the same negatives: A's sampler outputs are fed (pinned to the draw above)
sa.run(opa, feed_dict={**fa, **{out: val for outs, vals in zip(samplers, sampled)
                                for out, val in zip(outs, vals)}})
sb.run(opb, feed_dict=fb)
with gb.as_default():
    after_b = {v.name: v.eval(sb) for v in tf.trainable_variables()}
with ga.as_default():
    after_a = {v.name: v.eval(sa) for v in tf.trainable_variables()}
d = max(float(np.abs(after_a[k] - after_b[k]).max()) for k in after_a)
print(f'update_max_abs_diff {d:.3g}')
print('ok' if abs(loss_a - loss_b) <= 1e-6 and d <= 1e-6 else 'MISMATCH')
