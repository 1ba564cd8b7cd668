#!/usr/bin/env python3
"""Run our training steps in bilm-tf's own training graph and compare, step by step.

Usage: bilm_tf_step.py --dump DIR --run RUN [--grad-dump GDIR --grad-run GRUN] [--steps N=50]
                       [--per-step] [--reference] [--threads T=2] [--tol 1e-5] [--curve-tol 1e-4]
                       [--verbose]

DIR is what SA_DUMP_STEPS=DIR wrote (ckpt-0.safetensors, step-K.safetensors), RUN the run
directory (options.json, checkpoints/ckpt-0000000K.safetensors, one per step). The graph is
bilm.training's (unedited, via bilm_tf_shim): LanguageModel(options, True) under 'lm' with
dropout 0, gradients of total_loss * unroll_steps, average_gradients, clip_grads, Adagrad
(learning_rate, initial accumulator 1.0). tf.nn.sampled_softmax_loss takes our negatives and
expected counts (exp(-shift)) through bilm_tf_shim.feed_sampled_values. ckpt-0's weights and
accumulators are loaded; the LSTM state starts at zero and is carried as train() carries it.

Checks (one line each, starting `bilm-tf`; exit 1 when one fails):
  step 1   the loss; every clipped gradient TF applied against ours recovered from ckpt-0 and
           ckpt-1 (below); every weight and accumulator after the update.
           rel = max|a - b| / max|b| over the tensor (b = TF), the worst tensor reported.
  N steps  max over steps |loss_tf - loss_ours| / loss_ours, TF running on its own weights.
  --per-step  each step k run from our ckpt-(k-1) (weights, accumulators, LSTM state): the loss
           (checked, <= --tol); the weights, accumulators and carried state after it (printed).
  --reference TF against its own trajectory, rerun from ckpt-0 and from ckpt-0 with every weight
           one ulp off: how far rounding alone moves the loss curve (printed, not checked).

The loss curves are a trajectory check: this config's first steps are violent (global norms in
the hundreds, a loss of 20 at step 3), and they amplify float32 rounding ~1000-fold by step 40;
bilm-tf's CPU kernels are not bit reproducible, so TF against itself moves by as much. With --f64
(our run with precision = "f64", bilm.training's DTYPE set to float64) rounding drops out and the
curves show whether the two compute the same trajectory.

Our gradient is not dumped; it is recovered per element from the Adagrad update
(acc1 = acc0 + g^2, w1 = w0 - lr g / sqrt(acc1)): |g| from the weights, (w0 - w1) sqrt(acc1) / lr,
or from the accumulators, sqrt(acc1 - acc0), whichever float32 rounding of the stored values
disturbs less, the sign from w0 - w1. At lr 0.2 a step moves small-gradient weights by a few
ulps of the weight (highway b_carry: ~1e-4 of max|g| lost), so GDIR/GRUN, when given, are a
one-step run of the same seed and data with a large learning_rate (e.g. 1e4): step 1's gradient
does not depend on lr, and there the update dwarfs the weight. Their ckpt-0 and step-1 must equal
DIR's. The same recovery applied to a float32 Adagrad step made with TF's exact gradient is printed
as the recovery's floor.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bilm_tf_shim import feed_sampled_values, load  # noqa: E402
from step_compare import adagrad_step, dense, load_st, our_name, recover, rel, to_tf  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument('--dump', required=True)
p.add_argument('--run', required=True)
p.add_argument('--grad-dump')
p.add_argument('--grad-run')
p.add_argument('--steps', type=int, default=50)
p.add_argument('--threads', type=int, default=2)
p.add_argument('--tol', type=float, default=1e-5)
p.add_argument('--curve-tol', type=float, default=1e-4)
p.add_argument('--curve-unchecked', action='store_true',
               help='print the loss curves\' difference without checking it (float32: a float64 run checks it)')
p.add_argument('--per-step', action='store_true',
               help='also run each step from our checkpoint before it (a check)')
p.add_argument('--reference', action='store_true',
               help='also run TF from ckpt-0 moved by one ulp (sizes float32 divergence; no check)')
p.add_argument('--f64', action='store_true',
               help='build bilm-tf\'s graph in float64 (its DTYPE) for a run of ours with precision = "f64"')
p.add_argument('--verbose', action='store_true')
a = p.parse_args()
if (a.grad_dump is None) != (a.grad_run is None):
    p.error('--grad-dump and --grad-run go together')
t_start = time.perf_counter()

def fail(msg):
    print(f'bilm-tf step check: {msg}')
    sys.exit(2)


for f in ['options.json'] + [f'checkpoints/ckpt-{1:08d}.safetensors']:
    if not os.path.exists(os.path.join(a.run, f)):
        fail(f'{a.run}/{f} is missing')
for k in range(1, a.steps + 1):
    if not os.path.exists(f'{a.dump}/step-{k}.safetensors'):
        fail(f'{a.dump}/step-{k}.safetensors is missing (the dump has fewer than {a.steps} steps)')

with open(os.path.join(a.run, 'options.json')) as f:
    options = json.load(f)
options['dropout'] = 0.0  # ours ran with dropout 0: the same deterministic step
B, T = options['batch_size'], options['unroll_steps']
S = options['n_negative_samples_batch']
lr = options.get('learning_rate', 0.2)
if not options.get('bidirectional') or 'char_cnn' not in options:
    fail('expected a bidirectional char-CNN model (plain ELMo)')

tf, bilm = load(threads=a.threads)
import bilm.training as bt  # noqa: E402

# float64: bilm.training builds every variable, placeholder and state in its module constant DTYPE
if a.f64:
    bt.DTYPE = 'float64'
real = np.float64 if a.f64 else np.float32
fed = feed_sampled_values(bt, bt.DTYPE)  # before the model is built
with tf.device('/cpu:0'):
    global_step = tf.get_variable('global_step', [], initializer=tf.constant_initializer(0),
                                  trainable=False)
    # A Python learning rate becomes a float32 tensor, cast up in a float64 graph: 0.2 would be
    # float32(0.2), 1.5e-8 off ours, in every update
    opt = tf.train.AdagradOptimizer(learning_rate=tf.constant(lr, tf.float64) if a.f64 else lr,
                                    initial_accumulator_value=1.0)
    with tf.variable_scope('lm'):
        model = bt.LanguageModel(options, True)
        loss = model.total_loss
        grads = opt.compute_gradients(loss * options['unroll_steps'],
                                      aggregation_method=tf.AggregationMethod.EXPERIMENTAL_TREE)
    grads = bt.average_gradients([grads], B, options)
    clipped, _ = bt.clip_grads(grads, options, False, global_step)
    train_op = opt.apply_gradients(clipped, global_step=global_step)
    init = tf.global_variables_initializer()
if len(fed) != 2:
    fail(f'expected 2 sampled softmax losses, the graph made {len(fed)}')


tvars = tf.trainable_variables()
names = [our_name(v) for v in tvars]
accs = [opt.get_slot(v, 'accumulator') for v in tvars]
ck0, _ = load_st(f'{a.dump}/ckpt-0.safetensors')
ck1, _ = load_st(f'{a.run}/checkpoints/ckpt-{1:08d}.safetensors')
# where our step-1 gradient is recovered from (see the top)
g_lr, g_ck0, g_ck1 = lr, ck0, ck1
if a.grad_run:
    with open(os.path.join(a.grad_run, 'options.json')) as f:
        g_lr = json.load(f).get('learning_rate', 0.2)
    g_ck0, _ = load_st(f'{a.grad_dump}/ckpt-0.safetensors')
    g_ck1, _ = load_st(f'{a.grad_run}/checkpoints/ckpt-{1:08d}.safetensors')
    s_a, _ = load_st(f'{a.dump}/step-1.safetensors')
    s_b, _ = load_st(f'{a.grad_dump}/step-1.safetensors')
    differ = [k for x, y in ((ck0, g_ck0), (s_a, s_b)) for k in sorted(set(x) | set(y))
              if not np.array_equal(x.get(k), y.get(k))]
    if differ:
        fail(f'{a.grad_dump} is not the same step 1 as {a.dump}: {differ[:3]} differ')
missing = [n for n in names if n not in ck0]
if missing:
    fail(f'no tensor in ckpt-0 for {missing}')
extra = sorted(k for k in ck0 if not k.startswith(('adagrad/', 'state/')) and k not in names)
if extra:
    fail(f'ckpt-0 tensors with no bilm-tf variable: {extra}')




config = tf.ConfigProto(allow_soft_placement=True, intra_op_parallelism_threads=a.threads,
                        inter_op_parallelism_threads=a.threads)
sess = tf.Session(config=config)
sess.run(init)
init_state = tf.nest.flatten(model.init_lstm_state)
final_state = tf.nest.flatten(model.final_lstm_state)
n_layers = options['lstm']['n_layers']
# flatten order: direction, layer, LSTMStateTuple (c, m)
state_names = [f'state/{d}/{l}/{part}' for d in range(2) for l in range(n_layers) for part in 'cm']


def load_ckpt(ck, jitter=None):
    """Our checkpoint's weights and accumulators into TF; returns its carried LSTM state.
    jitter: a RandomState that moves every weight by one ulp up or down."""
    for v, acc, n in zip(tvars, accs, names):
        w = to_tf(v, ck[n], fail)
        if jitter is not None:
            # the direction in the weights' type too: a float64 one would step a float32 by a float64 ulp
            w = np.nextafter(w, np.where(jitter.rand(*w.shape) < 0.5, -np.inf, np.inf).astype(w.dtype))
        v.load(w, sess)
        acc.load(to_tf(acc, ck['adagrad/' + n], fail), sess)
    out = []
    for t, n in zip(init_state, state_names):
        if list(ck[n].shape) != t.shape.as_list():
            fail(f'{n}: shape {list(ck[n].shape)} vs bilm-tf state {t.shape.as_list()}')
        out.append(ck[n])
    return out


state = load_ckpt(ck0)
nonzero_state = [n for n in state_names if np.any(ck0[n])]
if nonzero_state:
    fail(f'ckpt-0 carries a nonzero LSTM state ({nonzero_state[:2]}); bilm-tf starts from zeros')


def step_feed(k, state):
    st, _ = load_st(f'{a.dump}/step-{k}.safetensors')
    feed = dict(zip(init_state, state))
    # our backward batch is bilm-tf's reverse stream (reversed sentences, its own rows), in the
    # order its LSTM reads it: the same as tokens_characters_reverse / next_token_id_reverse
    feed[model.tokens_characters] = st['forward/char_ids'].astype(np.int64)
    feed[model.tokens_characters_reverse] = st['backward/char_ids'].astype(np.int64)
    feed[model.next_token_id] = st['forward/targets'].astype(np.int64)
    feed[model.next_token_id_reverse] = st['backward/targets'].astype(np.int64)
    for d, (ids, t_exp, s_exp) in zip(('forward', 'backward'), fed):
        if st[f'{d}/sampled'].shape != (S,) or st[f'{d}/true_shift'].shape != (B * T,):
            fail(f'step {k} {d}: sampled {st[d + "/sampled"].shape}, true_shift '
                 f'{st[d + "/true_shift"].shape}; expected ({S},), ({B * T},)')
        feed[ids] = st[f'{d}/sampled'].astype(np.int64)
        # TF's sampler hands float32 counts; the loss subtracts log(count) in float32 (float64 in a
        # float64 graph)
        feed[t_exp] = np.exp(-st[f'{d}/true_shift']).astype(real).reshape(B * T, 1)
        feed[s_exp] = np.exp(-st[f'{d}/sampled_shift']).astype(real)
    return feed, float(st['loss'].reshape(-1)[0])


def worst(pairs):
    r = [(rel(x, ref), n) for n, x, ref in pairs]
    return max(r) if r else (0.0, '-')


clipped_fetch = [g for g, _ in clipped]
norm_fetch = tf.linalg.global_norm([g for g, _ in grads])
ok = True
losses = []
clipped_steps = 0  # steps whose global norm clip_grads scaled down
t_loop = time.perf_counter()
for k in range(1, a.steps + 1):
    feed, ours_loss = step_feed(k, state)
    if k == 1:
        out = sess.run([train_op, loss, norm_fetch, clipped_fetch] + final_state, feed_dict=feed)
        tf_loss, gnorm, g_tf = out[1], out[2], out[3]
        state = out[4:]
        w1_tf = sess.run(tvars)
        a1_tf = sess.run(accs)
        gpairs, floor, wpairs, apairs = [], [], [], []
        for i, (v, n) in enumerate(zip(tvars, names)):
            shape = v.shape.as_list()
            w0 = ck0[n].reshape(shape)
            a0 = ck0['adagrad/' + n].reshape(shape)
            w1 = ck1[n].reshape(shape)
            a1 = ck1['adagrad/' + n].reshape(shape)
            gt = dense(g_tf[i], v)
            gw0, ga0 = g_ck0[n].reshape(shape), g_ck0['adagrad/' + n].reshape(shape)
            gpairs.append((n, recover(gw0, g_ck1[n].reshape(shape), ga0,
                                      g_ck1['adagrad/' + n].reshape(shape), g_lr), gt))
            sw1, sa1 = adagrad_step(gw0, ga0, gt, g_lr)
            floor.append((n, recover(gw0, sw1, ga0, sa1, g_lr), gt))
            wpairs.append((n, w1, w1_tf[i]))
            apairs.append((n, a1, a1_tf[i]))
            if a.verbose:
                print(f'  {n:50s} grad {rel(gpairs[-1][1], gt):.2e} (floor {rel(floor[-1][1], gt):.2e}) '
                      f'weight {rel(w1, w1_tf[i]):.2e} acc {rel(a1, a1_tf[i]):.2e} '
                      f'max|g| {np.abs(gt).max():.3g}')
        l_rel = abs(tf_loss - ours_loss) / abs(ours_loss)
        g_rel, g_name = worst(gpairs)
        f_rel, f_name = worst(floor)
        w_rel, w_name = worst(wpairs)
        a_rel, a_name = worst(apairs)
        good = max(l_rel, g_rel, w_rel, a_rel) <= a.tol
        ok &= good
        print(f'bilm-tf step 1: loss {tf_loss:.6f} vs {ours_loss:.6f} (rel {l_rel:.1e}), global norm '
              f'{gnorm:.4g} (clip {options["all_clip_norm_val"]:g}); {len(gpairs)} gradients max rel '
              f'{g_rel:.1e} ({g_name}; recovered at lr {g_lr:g}, floor {f_rel:.1e}), {len(wpairs)} updated weights max rel '
              f'{w_rel:.1e} ({w_name}), accumulators max rel {a_rel:.1e} ({a_name}): '
              f'{"pass" if good else "FAIL"} (<= {a.tol:g}; rel = max|ours - tf| / max|tf| per tensor)',
              flush=True)
    else:
        out = sess.run([train_op, loss, norm_fetch] + final_state, feed_dict=feed)
        tf_loss, gnorm, state = out[1], out[2], out[3:]
    clipped_steps += gnorm > options['all_clip_norm_val']
    losses.append((k, float(tf_loss), ours_loss))
    if a.verbose:
        print(f'  step {k}: loss tf {tf_loss:.6f} ours {ours_loss:.6f}', flush=True)

r = [(abs(t - o) / abs(o), k) for k, t, o in losses]
c_rel, c_step = max(r)
good = c_rel <= a.curve_tol or a.curve_unchecked
ok &= good
verdict = 'not checked here' if a.curve_unchecked else ('pass' if good else 'FAIL')
print(f'bilm-tf {a.steps} steps{" in float64" if a.f64 else ""}: loss curves max rel diff {c_rel:.1e} '
      f'(step {c_step}; first {losses[0][1]:.5f}, last {losses[-1][1]:.5f} vs {losses[-1][2]:.5f}; '
      f'{clipped_steps} steps clipped): {verdict} (<= {a.curve_tol:g}; '
      f'{time.perf_counter() - t_loop:.0f} s of steps, {time.perf_counter() - t_start:.0f} s in all)')

if a.per_step:
    # each step k from our ckpt-(k-1) (weights, accumulators, carried state): whether every
    # single step agrees, apart from how differences grow along a trajectory
    t0 = time.perf_counter()
    worst_l, worst_w, worst_a = (0.0, 0), (0.0, '-', 0), (0.0, '-', 0)
    prev = ck0
    for k in range(1, a.steps + 1):
        cur, _ = load_st(f'{a.run}/checkpoints/ckpt-{k:08d}.safetensors')
        feed, ours_loss = step_feed(k, load_ckpt(prev))
        out = sess.run([train_op, loss, norm_fetch] + final_state, feed_dict=feed)
        gnorm = out.pop(2)
        worst_l = max(worst_l, (abs(out[1] - ours_loss) / abs(ours_loss), k))
        w_tf, a_tf = sess.run(tvars), sess.run(accs)
        ratios = []
        for i, (v, n) in enumerate(zip(tvars, names)):
            shape = v.shape.as_list()
            worst_w = max(worst_w, (rel(cur[n].reshape(shape), w_tf[i]), n, k))
            worst_a = max(worst_a, (rel(cur['adagrad/' + n].reshape(shape), a_tf[i]), n, k))
            if a.verbose:
                # our update against TF's: least-squares scale (1 when they agree) and the rest
                w_prev = prev[n].reshape(shape).astype(np.float64)
                du, dt = cur[n].reshape(shape) - w_prev, w_tf[i] - w_prev
                sc = float((du * dt).sum() / max((dt * dt).sum(), 1e-300))
                ratios.append((sc, rel(du, dt), n))
        if a.verbose:
            sc = sorted(x[0] for x in ratios)
            wr = max(ratios, key=lambda x: x[1])
            print(f'  step {k}: loss rel {abs(out[1] - ours_loss) / abs(ours_loss):.1e}, norm {gnorm:.5g}; '
                  f'update scale ours/tf min {sc[0] - 1:+.2e} median {sc[len(sc) // 2] - 1:+.2e} max '
                  f'{sc[-1] - 1:+.2e}; worst update {wr[2]} rel {wr[1]:.1e}', flush=True)
        for n, x in zip(state_names, out[2:]):
            worst_w = max(worst_w, (rel(cur[n], x), n, k))
        prev = cur
    # only the loss is checked: a ReLU input within rounding of 0 (the highway's transform gate)
    # lets one token's gradient through on one side only, legitimately, now and then
    good = worst_l[0] <= a.tol
    ok &= good
    print(f'bilm-tf each of {a.steps} steps from our checkpoint before it: loss max rel {worst_l[0]:.1e} '
          f'(step {worst_l[1]}): {"pass" if good else "FAIL"} (<= {a.tol:g}); after the step weights and '
          f'carried state max rel {worst_w[0]:.1e} ({worst_w[1]}, step {worst_w[2]}), accumulators '
          f'{worst_a[0]:.1e} ({worst_a[1]}, step {worst_a[2]}) ({time.perf_counter() - t0:.0f} s)', flush=True)

if a.reference:
    # how far float32 rounding alone carries a trajectory: TF against its first trajectory, rerun
    # from the same ckpt-0 (TF's own run-to-run rounding: its CPU kernels are not bit
    # reproducible) and from ckpt-0 with every weight one ulp off. No pass or fail: it sizes what
    # the loss-curve tolerance can ask.
    for what, jitter in (('rerun from ckpt-0', None),
                         ('from ckpt-0 moved by one ulp', np.random.RandomState(1))):
        t0 = time.perf_counter()
        state = load_ckpt(ck0, jitter=jitter)
        r = []
        for k, tf_loss, _ in losses:
            feed, _ = step_feed(k, state)
            out = sess.run([train_op, loss] + final_state, feed_dict=feed)
            state = out[2:]
            r.append((abs(out[1] - tf_loss) / abs(tf_loss), k))
        m = max(r)
        print(f'bilm-tf reference, TF against TF {what}: loss curves max rel diff {m[0]:.1e} (step '
              f'{m[1]}; up to step 10 {max(r[:10])[0]:.1e}) ({time.perf_counter() - t0:.0f} s)', flush=True)
sess.close()
sys.exit(0 if ok else 1)
