#!/usr/bin/env python3
"""Compare two embedding files in bilm-tf/AllenNLP's layout (datasets "0", "1", ..., each
[layers, tokens, dim]; `sentence_to_index` ignored).

Usage: bilm_tf_compare.py A.hdf5 B.hdf5

Prints `max_abs_diff X`, the worst sentence and layer, and the max per layer. Exits 1 when the
sentence keys or any shape differ (naming the first few), 0 otherwise.
"""
import sys

import h5py
import numpy as np

if len(sys.argv) != 3:
    sys.exit(__doc__)


def keys(f):
    return {k for k in f.keys() if k != 'sentence_to_index'}


with h5py.File(sys.argv[1], 'r') as fa, h5py.File(sys.argv[2], 'r') as fb:
    ka, kb = keys(fa), keys(fb)
    if ka != kb:
        print(f'keys differ: {len(ka)} vs {len(kb)} sentences; only in A: {sorted(ka - kb)[:5]}, '
              f'only in B: {sorted(kb - ka)[:5]}')
        sys.exit(1)
    order = sorted(ka, key=lambda k: (not k.isdigit(), int(k) if k.isdigit() else 0, k))
    bad = [(k, fa[k].shape, fb[k].shape) for k in order if fa[k].shape != fb[k].shape]
    if bad:
        print(f'{len(bad)} shapes differ, e.g. ' +
              ', '.join(f'sentence {k}: {sa} vs {sb}' for k, sa, sb in bad[:5]))
        sys.exit(1)
    worst, worst_key, worst_layer = 0.0, None, None
    per_layer = {}
    for k in order:
        a = fa[k][...].astype(np.float64)
        b = fb[k][...].astype(np.float64)
        if a.size == 0:
            continue
        d = np.abs(a - b).reshape(a.shape[0], -1).max(axis=1)
        for layer, v in enumerate(d):
            per_layer[layer] = max(per_layer.get(layer, 0.0), float(v))
        if d.max() > worst or worst_key is None:
            worst, worst_key, worst_layer = float(d.max()), k, int(d.argmax())
    print(f'sentences {len(order)}; per layer max ' +
          ' '.join(f'L{l}={v:.3g}' for l, v in sorted(per_layer.items())))
    print(f'worst sentence {worst_key} (layer {worst_layer}, shape {fa[worst_key].shape})'
          if worst_key is not None else 'no data')
    print(f'max_abs_diff {worst:.6g}')
