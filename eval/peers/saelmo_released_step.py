#!/usr/bin/env python3
"""One SaELMo training step of ours, rerun in the paper's released TensorFlow graph, compared.

Usage: saelmo_released_step.py --released SA_ELMO_DIR --dump DIR --run RUN [--step N=2]
                               [--grad-dump GDIR --grad-run GRUN] [--pythonpath P ...]
                               [--threads T=2] [--tol 1e-5] [--verbose]

SA_ELMO_DIR is the released code's `sa_elmo` folder (the bilm-tf fork of "Towards Multi-Sense
Cross-Lingual Alignment of Contextual Embeddings"; e.g. `git archive HEAD sa_elmo` of
ntunlp/multisense_embedding_alignment). It is imported as it is (its `bilm` package, through
bilm_tf_shim: TF1 code on TensorFlow 2.x); nothing of it is copied or changed. Its training.py
imports scikit-learn (PCA, which this check never calls): give a folder holding it with
--pythonpath when the venv lacks it.

DIR is what SA_DUMP_STEPS=DIR wrote for a SaELMo run (step-N.safetensors: each direction's char
ids, targets, selection vectors `ctx`, chosen rows `selected`, sampled sense rows
`negative_rows`, and the loss), RUN its run directory with a checkpoint after every step
(checkpoint_every = 1). The run must use the released rules: dropout 0 (the step is then
deterministic), sense_negatives = "uniform", center_update = "released", selection_mean = "none",
per-direction tables. Pick N after the warm-up (contextual_warmup = 1: N = 2) so the real senses
are live.

The graph is train()'s for one tower (bilm/training.py:793-870): LanguageModel(options, True,
enable_softmax_sense_updt=True) under 'lm', gradients of total_loss * unroll_steps,
average_gradients, clip_grads, Adagrad(learning_rate, initial accumulator 1). Loaded from our
state before step N (ckpt-0 of DIR when N = 1, else RUN's ckpt-(N-1)): every weight and Adagrad
accumulator, the sense tables W, b (sense/0 = forward, sense/1 = backward: `W`, `b`,
`W_reverse`, `b_reverse`), the centers (softmax_sense_all{,_reverse}, loaded with var.load), the
enabled scores (fed as context_enabled{,_reverse}), the projections (cluster_proj{,_reverse}) and
the carried LSTM states (init_lstm_state). Fed our step's char ids, targets, and our sampled
sense rows in place of the released `tf.random.shuffle(valid)[:S]` (bilm/util.py:289; the
StopGradient after it is fed).

Checks (lines starting `saelmo-released`; exit 1 when one fails):
  selection  the released choice (its own cosine, bilm/util.py:17-38 and :368-381, from the same
             centers, projection and top outputs) against our `selected`: disagreements (0 to
             pass); also its selection vectors (tk_context, bilm/training.py:32-36) against our
             dumped `ctx`. When choices differ, the rest of the step is run with ours forced (the
             ArgMax output fed), and said so.
  loss       total_loss (0.5 (mean fwd + mean bwd)) against our dumped loss.
  gradients  every clipped gradient TF applied against ours recovered from the checkpoints
             before and after the step (recovery as eval/peers/bilm_tf_step.py: |g| from the
             weights, (w0 - w1) sqrt(acc1) / lr, or the accumulators, sqrt(acc1 - acc0), whichever
             the float32 rounding of the stored values disturbs less); then every weight and
             accumulator after the update. rel = max|ours - tf| / max|tf| per tensor, the worst
             tensor reported. At lr 0.2 small gradients move a weight by a few ulps, so
             GDIR/GRUN, when given, are the same step N rerun from RUN's ckpt-(N-1) at a large
             learning rate (a copy of RUN holding only that checkpoint, with learning_rate raised
             in its config.cfg and options.json; step N's gradient does not depend on lr): their
             step-N dump must equal DIR's. The recovery applied to a float32 Adagrad step made
             with TF's exact gradient is printed as its floor.
  centers    the released center update (softmax_sense_updt{,_reverse}_op, training.py:615-632:
             c <- 0.01 sum/(count + 1e-5) + 0.99 c) against our centers after the step; also the
             change alone (after - before), which the stored magnitudes (N(0, 16)) would hide.
  state      the final LSTM states against the carried states in RUN's ckpt-N.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

p = argparse.ArgumentParser()
p.add_argument('--released', required=True, help="the released code's sa_elmo folder")
p.add_argument('--dump', required=True)
p.add_argument('--run', required=True)
p.add_argument('--step', type=int, default=2)
p.add_argument('--grad-dump')
p.add_argument('--grad-run')
p.add_argument('--pythonpath', action='append', default=[],
               help='a folder appended to sys.path (e.g. a pip --target holding scikit-learn)')
p.add_argument('--threads', type=int, default=2)
p.add_argument('--tol', type=float, default=1e-5)
p.add_argument('--verbose', action='store_true')
a = p.parse_args()
if (a.grad_dump is None) != (a.grad_run is None):
    p.error('--grad-dump and --grad-run go together')
t_start = time.perf_counter()
N = a.step

def fail(msg):
    print(f'saelmo-released step check: {msg}')
    sys.exit(2)


def ckpt_before(dump, run, k):
    return f'{dump}/ckpt-0.safetensors' if k == 1 else f'{run}/checkpoints/ckpt-{k - 1:08d}.safetensors'


need = [os.path.join(a.run, 'options.json'), ckpt_before(a.dump, a.run, N),
        f'{a.run}/checkpoints/ckpt-{N:08d}.safetensors', f'{a.dump}/step-{N}.safetensors']
if a.grad_run:
    need += [f'{a.grad_run}/checkpoints/ckpt-{N:08d}.safetensors', f'{a.grad_dump}/step-{N}.safetensors',
             os.path.join(a.grad_run, 'options.json'), ckpt_before(a.grad_dump, a.grad_run, N)]
for f in need:
    if not os.path.exists(f):
        fail(f'{f} is missing (a run with checkpoint_every = 1 and SA_DUMP_STEPS, N >= 1)')
if not os.path.isfile(os.path.join(a.released, 'bilm', 'util.py')):
    fail(f'{a.released} is not the released sa_elmo folder (no bilm/util.py)')

with open(os.path.join(a.run, 'options.json')) as f:
    options = json.load(f)
sense = options.get('sensealign', {}).get('sense', {})
want = {'center_update': 'released', 'sense_negatives': 'uniform', 'selection_mean': 'none'}
bad = {k: sense.get(k) for k, v in want.items() if sense.get(k) != v}
if options.get('dropout', 0) != 0:
    bad['dropout'] = options['dropout']
if sense.get('softmax_tables') not in ('default', 'per_direction'):
    bad['softmax_tables'] = sense.get('softmax_tables')
if bad:
    fail(f'the run does not follow the released rules: {bad} (want {want}, dropout 0, per-direction tables)')
if not options.get('bidirectional') or 'char_cnn' not in options or options.get('n_context', 1) < 2:
    fail('expected a bidirectional char-CNN SaELMo (n_context >= 2)')
options['dropout'] = 0.0
options['context_select_log'] = True  # only adds the fetchable selection (training.py:566, 611)
B, T = options['batch_size'], options['unroll_steps']
C, S = options['n_context'], options['n_negative_samples_batch']
V, D = options['n_tokens_vocab'], options['lstm']['projection_dim']
lr = options.get('learning_rate', 0.2)
alpha = options.get('sense_learning_rate', 0.01)

# the released bilm, not PyPI's: its folder first on sys.path, then bilm_tf_shim's TF2 port
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bilm_tf_shim import load  # noqa: E402
from step_compare import adagrad_step, dense, load_st, our_name, recover, rel, to_tf  # noqa: E402
sys.path.insert(0, os.path.abspath(a.released))
for extra in a.pythonpath:
    sys.path.append(os.path.abspath(extra))
try:
    tf, bilm = load(threads=a.threads)
except ImportError as e:
    fail(f'importing the released bilm failed ({e}); its training.py imports sklearn: --pythonpath DIR')
if not os.path.abspath(bilm.__file__).startswith(os.path.abspath(a.released)):
    fail(f'imported {bilm.__file__}, not the released bilm')
import bilm.training as bt  # noqa: E402

with tf.device('/cpu:0'):  # train(), one tower (training.py:793-870)
    global_step = tf.get_variable('global_step', [], initializer=tf.constant_initializer(0),
                                  trainable=False)
    opt = tf.train.AdagradOptimizer(learning_rate=lr, initial_accumulator_value=1.0)
    with tf.variable_scope('lm'):
        model = bt.LanguageModel(options, True, enable_softmax_sense_updt=True)
        loss = model.total_loss
        grads = opt.compute_gradients(loss * T, aggregation_method=tf.AggregationMethod.EXPERIMENTAL_TREE)
    grads = bt.average_gradients([grads], B, options)
    clipped, _ = bt.clip_grads(grads, options, False, global_step)
    train_op = opt.apply_gradients(clipped, global_step=global_step)
    init = tf.global_variables_initializer()
g = tf.get_default_graph()

# the negatives: util.py:289 `sampled = tf.random.shuffle(valid_sample_index)[:num_sampled]`, then
# util.py:291 stop_gradient -- feed that StopGradient; the choice: util.py:381's ArgMax
neg_t, argmax_t = [], []
for op in g.get_operations():
    if op.type == 'RandomShuffle':
        sl = op.outputs[0].consumers()[0]
        neg_t.append([c for c in sl.outputs[0].consumers() if c.type == 'StopGradient'][0].outputs[0])
    if op.type == 'ArgMax' and 'sampled_softmax_loss' in op.name:
        argmax_t.append(op.outputs[0])
neg_t.sort(key=lambda t: t.name)  # lm/sampled_softmax_loss/ (forward), lm/sampled_softmax_loss_1/
argmax_t.sort(key=lambda t: t.name)
if len(neg_t) != 2 or len(argmax_t) != 2:
    fail(f'expected 2 negative draws and 2 sense choices, found {[t.name for t in neg_t + argmax_t]}')


# the released code's sense softmax variables -> our sense tables
SENSE_NAMES = {'softmax/W': 'sense/0/W', 'softmax/b': 'sense/0/b', 'softmax/W_reverse': 'sense/1/W',
               'softmax/b_reverse': 'sense/1/b', 'softmax/softmax_sense_all': 'sense/0/centers',
               'softmax/softmax_sense_all_reverse': 'sense/1/centers'}


tvars = tf.trainable_variables()
names = [our_name(v, SENSE_NAMES) for v in tvars]
accs = [opt.get_slot(v, 'accumulator') for v in tvars]
centers = [model.softmax_sense_all, model.softmax_sense_all_reverse]
ck0, _ = load_st(ckpt_before(a.dump, a.run, N))
ck1, _ = load_st(f'{a.run}/checkpoints/ckpt-{N:08d}.safetensors')
st, _ = load_st(f'{a.dump}/step-{N}.safetensors')
g_lr, g_ck0, g_ck1 = lr, ck0, ck1
if a.grad_run:
    with open(os.path.join(a.grad_run, 'options.json')) as f:
        g_lr = json.load(f).get('learning_rate', 0.2)
    g_ck0, _ = load_st(ckpt_before(a.grad_dump, a.grad_run, N))
    g_ck1, _ = load_st(f'{a.grad_run}/checkpoints/ckpt-{N:08d}.safetensors')
    s_b, _ = load_st(f'{a.grad_dump}/step-{N}.safetensors')
    differ = [k for x, y in ((ck0, g_ck0), (st, s_b)) for k in sorted(set(x) | set(y))
              if not np.array_equal(x.get(k), y.get(k))]
    if differ:
        fail(f'{a.grad_dump} is not the same step {N} as {a.dump}: {differ[:3]} differ')
missing = [n for n in names + [our_name(c, SENSE_NAMES) for c in centers] if n not in ck0]
if missing:
    fail(f'no tensor in {ckpt_before(a.dump, a.run, N)} for {missing}')
extra = sorted(k for k in ck0 if not k.startswith(('adagrad/', 'state/', 'sense/')) and k not in names)
if extra:
    fail(f'checkpoint tensors with no released variable: {extra}')




config = tf.ConfigProto(allow_soft_placement=True, intra_op_parallelism_threads=a.threads,
                        inter_op_parallelism_threads=a.threads)
sess = tf.Session(config=config)
sess.run(init)
for v, acc, n in zip(tvars, accs, names):
    v.load(to_tf(v, ck0[n], fail), sess)
    acc.load(to_tf(acc, ck0['adagrad/' + n], fail), sess)
for d, c in enumerate(centers):
    c.load(to_tf(c, ck0[f'sense/{d}/centers'], fail), sess)

# feeds
init_state = tf.nest.flatten(model.init_lstm_state)  # per direction, per layer: c, h
final_state = tf.nest.flatten(model.final_lstm_state)
n_layers = options['lstm']['n_layers']
state_names = [f'state/{d}/{l}/{x}' for d in range(2) for l in range(n_layers) for x in ('c', 'm')]
if len(init_state) != len(state_names):
    fail(f'{len(init_state)} initial state tensors, expected {len(state_names)}')
feed = {t: to_tf(t, ck0[n], fail) if n in ck0 else np.zeros(t.shape.as_list(), np.float32)
        for t, n in zip(init_state, state_names)}
dirs = ('forward', 'backward')
feed[model.tokens_characters] = st['forward/char_ids'].astype(np.int32)
feed[model.tokens_characters_reverse] = st['backward/char_ids'].astype(np.int32)
feed[model.next_token_id] = st['forward/targets'].astype(np.int64)
feed[model.next_token_id_reverse] = st['backward/targets'].astype(np.int64)
enabled = [ck0[f'sense/{d}/enabled'].astype(np.float32).reshape(-1) for d in range(2)]
feed[model.context_enabled], feed[model.context_enabled_reverse] = enabled
proj = [ck0[f'sense/{d}/projection'].astype(np.float32) for d in range(2)]
if proj[0].shape != (D, options['cluster_proj_dim']):
    fail(f'sense/0/projection is {proj[0].shape}, the released cluster_proj [{D}, {options["cluster_proj_dim"]}]')
feed[model.cluster_proj], feed[model.cluster_proj_reverse] = proj
ours_sel = []
for d, name in enumerate(dirs):
    rows = st[f'{name}/negative_rows'].astype(np.int64)
    n_en = int((enabled[d] > 1e-6).sum())
    if rows.shape != (S,) or S > n_en or not np.all(enabled[d][rows] > 1e-6):
        fail(f'{name}: {rows.shape[0]} negatives for S = {S} over {n_en} enabled rows, '
             f'{int((enabled[d][rows] <= 1e-6).sum())} of them disabled')
    feed[neg_t[d]] = rows
    sel = st[f'{name}/selected'].astype(np.int64).reshape(-1)
    tgt = st[f'{name}/targets'].astype(np.int64).reshape(-1)
    if not np.array_equal(sel // C, tgt):
        fail(f'{name}: our selected rows are not rows of their targets (selected // C != target)')
    ours_sel.append(sel)
ours_loss = float(st['loss'].reshape(-1)[0])

ok = True


def verdict(good):
    global ok
    ok &= bool(good)
    return 'pass' if good else 'FAIL'


# (1) the selection: the released graph's own choice, no update run
sel_tf, ctx_tf = sess.run([model.context_select_log, model.tk_context_ + model.tk_context_reverse_], feed)
disagree = [int((np.asarray(sel_tf[d]) != ours_sel[d]).sum()) for d in range(2)]
ctx_rel = [rel(st[f'{n}/ctx'], ctx_tf[d]) for d, n in enumerate(dirs)]
senses = [np.bincount(ours_sel[d] % C, minlength=C).tolist() for d in range(2)]


def margin(d):
    """the smallest gap between the best and the second enabled cosine (double), over targets with
    two or more enabled senses: how close a choice came to flipping"""
    rows = ours_sel[d][:, None] // C * C + np.arange(C)
    pr = proj[d].astype(np.float64)
    u = ctx_tf[d].astype(np.float64) @ pr
    vv = ck0[f'sense/{d}/centers'][rows].astype(np.float64) @ pr
    cos = np.einsum('nk,nsk->ns', u, vv) / (np.linalg.norm(vv, axis=2) * np.linalg.norm(u, axis=1, keepdims=True))
    cos = np.where(enabled[d][rows] > 1e-6, cos, -np.inf)
    top2 = np.sort(cos, axis=1)[:, -2:]
    two = np.isfinite(top2[:, 0])
    return float((top2[two, 1] - top2[two, 0]).min()) if two.any() else float('nan')


good = sum(disagree) == 0
print(f'saelmo-released step {N} selection: {disagree[0]} + {disagree[1]} of 2 x {B * T} chosen rows differ '
      f'(ours by sense fwd {senses[0]} bwd {senses[1]}; smallest cosine margin {min(margin(0), margin(1)):.1e}); '
      f'selection vectors max rel {max(ctx_rel):.1e}: {verdict(good)}', flush=True)
if not good:
    # say which: the released cosine margin at the rows that differ
    for d in range(2):
        idx = np.where(np.asarray(sel_tf[d]) != ours_sel[d])[0][:5]
        for i in idx:
            rows = (ours_sel[d][i] // C) * C + np.arange(C)
            u = ctx_tf[d][i].astype(np.float64) @ proj[d].astype(np.float64)
            vv = ck0[f'sense/{d}/centers'][rows].astype(np.float64) @ proj[d].astype(np.float64)
            cos = vv @ u / (np.linalg.norm(vv, axis=1) * np.linalg.norm(u))
            print(f'  {dirs[d]} token {i}: released row {sel_tf[d][i]}, ours {ours_sel[d][i]}; cosines '
                  f'(double) {np.array2string(cos, precision=7)} enabled {enabled[d][rows]}')
    for d in range(2):
        feed[argmax_t[d]] = ours_sel[d] % C
    print('  the step below runs with our choices forced (the ArgMax outputs fed)')

# (2)-(4): the step as train() runs it: train_op with the center updates (training.py:1089-1099)
norm_fetch = tf.linalg.global_norm([gr for gr, _ in grads])
out = sess.run([train_op, loss, model.individual_losses, norm_fetch, [gr for gr, _ in clipped],
                model.softmax_sense_updt_op, model.softmax_sense_updt_reverse_op, model.context_select_log]
               + final_state, feed)
tf_loss, ind, gnorm, g_tf = out[1], out[2], out[3], out[4]
new_centers = out[5:7]
state_tf = out[8:]
w1_tf = sess.run(tvars)
a1_tf = sess.run(accs)

l_rel = abs(tf_loss - ours_loss) / abs(ours_loss)
print(f'saelmo-released step {N} loss: {tf_loss:.7f} (fwd {ind[0]:.6f}, bwd {ind[1]:.6f}) vs ours '
      f'{ours_loss:.7f}, rel {l_rel:.1e}: {verdict(l_rel <= a.tol)} (<= {a.tol:g})', flush=True)


gp, fl, wp, ap = [], [], [], []
for i, (v, n) in enumerate(zip(tvars, names)):
    shape = v.shape.as_list()
    gt = dense(g_tf[i], v)
    r = lambda ck, k: ck[k].reshape(shape)  # noqa: E731
    gp.append((rel(recover(r(g_ck0, n), r(g_ck1, n), r(g_ck0, 'adagrad/' + n), r(g_ck1, 'adagrad/' + n), g_lr), gt), n))
    sw, sa = adagrad_step(r(g_ck0, n), r(g_ck0, 'adagrad/' + n), gt, g_lr)
    fl.append((rel(recover(r(g_ck0, n), sw, r(g_ck0, 'adagrad/' + n), sa, g_lr), gt), n))
    wp.append((rel(r(ck1, n), w1_tf[i]), n))
    ap.append((rel(r(ck1, 'adagrad/' + n), a1_tf[i]), n))
    if a.verbose:
        print(f'  {n:50s} grad {gp[-1][0]:.2e} (floor {fl[-1][0]:.2e}) weight {wp[-1][0]:.2e} '
              f'acc {ap[-1][0]:.2e} max|g| {np.abs(gt).max():.3g}')
g_rel, g_name = max(gp)
f_rel, f_name = max(fl)
w_rel, w_name = max(wp)
a_rel, a_name = max(ap)
print(f'saelmo-released step {N} gradients: global norm {gnorm:.5g} (clip {options["all_clip_norm_val"]:g}); '
      f'{len(gp)} clipped gradients max rel {g_rel:.1e} ({g_name}; recovered at lr {g_lr:g}, floor {f_rel:.1e}): '
      f'{verdict(g_rel <= a.tol)} (<= {a.tol:g}; rel = max|ours - tf| / max|tf| per tensor)'
      + (f'; the recovery floor exceeds {a.tol:g}: give --grad-dump/--grad-run' if f_rel > a.tol else ''),
      flush=True)
print(f'saelmo-released step {N} update: weights after max rel {w_rel:.1e} ({w_name}), accumulators '
      f'{a_rel:.1e} ({a_name}): {verdict(max(w_rel, a_rel) <= a.tol)} (<= {a.tol:g})', flush=True)

c_rel, dc_rel = [], []
for d in range(2):
    before = ck0[f'sense/{d}/centers'].astype(np.float64)
    ours_c = ck1[f'sense/{d}/centers'].astype(np.float64)
    c_rel.append(rel(ours_c, new_centers[d]))
    dc_rel.append(rel(ours_c - before, new_centers[d].astype(np.float64) - before))
print(f'saelmo-released step {N} centers (released EMA, alpha {alpha:g}): after the step max rel '
      f'{max(c_rel):.1e}, the change (after - before) max rel {max(dc_rel):.1e}: '
      f'{verdict(max(c_rel) <= a.tol)} (<= {a.tol:g} on the centers)', flush=True)

s_rel = max((rel(ck1[n].reshape(t.shape), t), n) for t, n in zip(state_tf, state_names) if n in ck1) \
    if all(n in ck1 for n in state_names) else (np.nan, 'none stored')
print(f'saelmo-released step {N} state: final LSTM states vs ours carried max rel {s_rel[0]:.1e} ({s_rel[1]}): '
      f'{verdict(s_rel[0] <= a.tol)} (<= {a.tol:g}); {time.perf_counter() - t_start:.0f} s in all', flush=True)
sess.close()
sys.exit(0 if ok else 1)
