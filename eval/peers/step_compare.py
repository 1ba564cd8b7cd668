"""What the one-step checks against TensorFlow graphs share (bilm_tf_step.py, saelmo_released_step.py):
our safetensors files read without the package, a fetched gradient made dense, and the gradient an
Adagrad step applied, recovered from the values before and after it."""
import json
import re
import struct

import numpy as np

_DT = {'F32': np.float32, 'F64': np.float64, 'I32': np.int32, 'I64': np.int64, 'U8': np.uint8}


def load_st(path):
    """safetensors without the package: u64 header length, JSON header, raw little-endian data."""
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        head = json.loads(f.read(n))
        raw = f.read()
    out = {}
    for k, v in head.items():
        if k == '__metadata__':
            continue
        b, e = v['data_offsets']
        out[k] = np.frombuffer(raw[b:e], dtype=np.dtype(_DT[v['dtype']]).newbyteorder('<')) \
            .reshape(v['shape']).copy()
    return out, head.get('__metadata__', {})


def our_name(v, renames=None):
    """A TF variable's name -> our checkpoint name: the scope `lm/` dropped, the LSTM cells under
    bilm-tf's TF 1.2 names (W_0, B, W_P_0), anything else through `renames` or kept."""
    n = re.sub(r':0$', '', v.name)
    n = re.sub(r'^lm/', '', n)
    m = re.match(r'(RNN_\d)/rnn/multi_rnn_cell/cell_(\d)/lstm_cell/(kernel|bias|projection/kernel)$', n)
    if m:
        part = {'kernel': 'W_0', 'bias': 'B', 'projection/kernel': 'W_P_0'}[m.group(3)]
        return f'{m.group(1)}/RNN/MultiRNNCell/Cell{m.group(2)}/LSTMCell/{part}'
    return (renames or {}).get(n, n)


def to_tf(v, x, fail):
    """Our tensor in TF variable v's shape: they differ only by unit axes (W_cnn [1,w,d,n] against
    [w,d,n], softmax/b [V] against [V,1]); anything else is `fail`ed."""
    shape = v.shape.as_list()
    if int(np.prod(shape)) != x.size:
        fail(f'{v.name}: shape {shape} vs ours {list(x.shape)}')
    return x.reshape(shape)


def rel(x, ref):
    """max |x - ref| / max |ref|: one figure per tensor."""
    x, ref = np.asarray(x, np.float64), np.asarray(ref, np.float64)
    den = np.abs(ref).max()
    d = np.abs(x - ref).max()
    return d / den if den > 0 else (0.0 if d == 0 else np.inf)


def dense(g, v):
    """A fetched gradient as a dense array in v's shape (IndexedSlices summed over their indices)."""
    if hasattr(g, 'indices'):  # IndexedSlicesValue
        out = np.zeros(v.shape.as_list(), np.float64)
        np.add.at(out, g.indices, g.values)
        return out
    return np.asarray(g, np.float64)


def adagrad_step(w0, a0, g, lr):
    """One Adagrad step (TF's ApplyAdagrad) in the weights' type, for the recovery's floor."""
    t = w0.dtype
    g = g.astype(t)
    a1 = (a0 + g * g).astype(t)
    return (w0 - t.type(lr) * g / np.sqrt(a1)).astype(t), a1


def recover(w0, w1, a0, a1, lr):
    """The gradient an Adagrad step applied, from stored (float32 or float64) before/after values:
    from the weights' change or from the accumulator's, whichever half an ulp of its stored value
    disturbs less."""
    t = np.asarray(w1).dtype
    w0, w1, a0, a1 = (np.asarray(x, np.float64) for x in (w0, w1, a0, a1))
    g_w = (w0 - w1) * np.sqrt(a1) / lr
    g_a = np.sqrt(np.maximum(a1 - a0, 0.0)) * np.sign(w0 - w1)
    e_w = 0.5 * np.spacing(np.abs(w1).astype(t)).astype(np.float64) * np.sqrt(a1) / lr
    e_a = 0.5 * np.spacing(np.abs(a1).astype(t)).astype(np.float64) / \
        np.maximum(2 * np.abs(g_w), 1e-30)
    return np.where(e_a < e_w, g_a, g_w)
