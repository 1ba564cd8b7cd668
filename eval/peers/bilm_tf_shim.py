"""Run bilm-tf's TF1 code (PyPI bilm==0.1.post5, unedited) on TensorFlow 2.21.

    from bilm_tf_shim import load
    tf, bilm = load(threads=2)   # tf is tf.compat.v1; bilm.model / .training / .data imported

Everything here is what the port needs, nothing about bilm's maths is changed:
- TF_USE_LEGACY_KERAS=1 before TensorFlow loads: tf.compat.v1.nn.rnn_cell (LSTMCell with
  num_proj/cell_clip/proj_clip, ResidualWrapper, DropoutWrapper, MultiRNNCell) and
  tf.compat.v1.nn.static_rnn/dynamic_rnn only exist through tf_keras (Keras 2); Keras 3 has none.
- disable_v2_behavior(): bilm builds graphs with placeholders, variable scopes and Sessions.
- `import tensorflow as tf` inside bilm resolves to tf.compat.v1 (sys.modules alias held only while
  bilm's modules load), so `tf.placeholder`, `tf.variable_scope`, `tf.train.AdagradOptimizer`,
  `tf.logging`, `tf.squeeze(squeeze_dims=)` etc. keep their TF1 meaning.
- Threads: TF_NUM_INTRAOP_THREADS / TF_NUM_INTEROP_THREADS, which TF reads for any Session whose
  ConfigProto leaves them 0 (bilm's dump_bilm_embeddings makes its own ConfigProto).
"""
import os
import sys
import types


def load(threads=None, quiet=True):
    if 'tensorflow' in sys.modules and not getattr(load, '_done', False):
        raise RuntimeError('bilm_tf_shim.load() must run before TensorFlow is imported')
    if not getattr(load, '_done', False):
        # must be set before TF reads them at import / first Session
        os.environ['TF_USE_LEGACY_KERAS'] = '1'
        if quiet:
            os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
        if threads:
            os.environ['TF_NUM_INTRAOP_THREADS'] = str(threads)
            os.environ['TF_NUM_INTEROP_THREADS'] = str(threads)
        import tensorflow as real_tf
        v1 = real_tf.compat.v1
        v1.disable_v2_behavior()
        # touch the lazily loaded names bilm uses, so that no lazy import happens while the alias
        # below is in place (it would see the v1 module as `tensorflow`)
        for name in ('nn', 'train', 'logging', 'summary'):
            getattr(v1, name)
        v1.nn.rnn_cell.LSTMCell, v1.nn.static_rnn, v1.nn.dynamic_rnn
        saved = sys.modules['tensorflow']
        sys.modules['tensorflow'] = v1
        try:
            import bilm  # noqa: F401  (imports bilm.data, bilm.model, bilm.elmo)
            import bilm.training  # noqa: F401
        finally:
            sys.modules['tensorflow'] = saved
        if quiet:
            v1.logging.set_verbosity(v1.logging.ERROR)  # training.py sets INFO at import
        load._done = True
        load._tf = v1
    import bilm
    return load._tf, bilm


def v1_module_with(**overrides):
    """A module that is tf.compat.v1 except for `overrides`, to give one bilm module (e.g.
    bilm.model.tf) an instrumented name without touching the shared tf.compat.v1."""
    v1 = load._tf
    mod = types.ModuleType('tf_compat_v1_proxy')
    mod.__getattr__ = lambda name: getattr(v1, name)
    for k, v in overrides.items():
        setattr(mod, k, v)
    return mod


def feed_sampled_values(module, dtype='float32'):
    """Make `module`'s (e.g. bilm.training) tf.nn.sampled_softmax_loss take its negatives from
    placeholders instead of TF's log-uniform sampler, so a step can be fed the negatives another
    trainer drew. Call before LanguageModel is built. Returns a list that fills, one entry per
    call (forward, then backward), with (sampled_ids int64 [S], true_expected [N, 1],
    sampled_expected [S]): TF's sampled_values triple, its counts in `dtype` (float32 as TF's
    sampler hands them; float64 for a float64 graph). Fill the counts with
    log_uniform_expected_count (TF's formula) or with the other trainer's own values."""
    v1 = load._tf
    made = []

    def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes,
                             num_true=1, sampled_values=None, **kw):
        n = len(made)
        triple = (v1.placeholder(v1.int64, [num_sampled], name=f'fed_sampled_ids_{n}'),
                  v1.placeholder(dtype, [labels.shape[0], num_true], name=f'fed_true_expected_{n}'),
                  v1.placeholder(dtype, [num_sampled], name=f'fed_sampled_expected_{n}'))
        made.append(triple)
        return v1.nn.sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes,
                                          num_true=num_true, sampled_values=triple, **kw)

    nn = types.ModuleType('tf_compat_v1_nn_proxy')
    nn.__getattr__ = lambda name: getattr(v1.nn, name)
    nn.sampled_softmax_loss = sampled_softmax_loss
    module.tf = v1_module_with(nn=nn)
    return made


def log_uniform_expected_count(ids, num_sampled, num_tries, range_max):
    """TF's LogUniformSampler expected counts (range_sampler.cc): P(k) = log((k+2)/(k+1)) /
    log(range_max+1) in double, rounded to float; count = P*S when every try was distinct, else
    -expm1(tries * log1p(-P)) in float."""
    import numpy as np
    k = np.asarray(ids, dtype=np.float64)
    p = (np.log((k + 2.0) / (k + 1.0)) / np.log(range_max + 1.0)).astype(np.float32)
    if num_tries == num_sampled:
        return p * np.float32(num_sampled)
    return (-np.expm1(np.float32(num_tries) * np.log1p(-p))).astype(np.float32)
