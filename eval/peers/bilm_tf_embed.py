#!/usr/bin/env python3
"""Embed a file with bilm-tf's own bilm.model.dump_bilm_embeddings (unedited, via bilm_tf_shim).

Usage: bilm_tf_embed.py --options O --weights W --vocab V --input TEXT --output OUT.hdf5
                        [--threads T=2] [--stateless]

Output: bilm-tf's layout, one dataset per sentence ("0", "1", ...) of shape [3, tokens, 2*proj].
By default bilm-tf's behaviour: one sentence per batch, the LSTM state carried from each sentence
into the next (our `bin/embed --stateful`). --stateless zeroes bilm's state variables before each
sentence (our default).

Prints `tokens_per_s X` (the input's words / time of the per-sentence loop, i.e. after the graph
is built and the weights loaded), `wall_s` of the whole dump, and `peak_rss_mib Y`.
"""
import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bilm_tf_shim import load, v1_module_with  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument('--options', required=True)
p.add_argument('--weights', required=True)
p.add_argument('--vocab', required=True)
p.add_argument('--input', required=True)
p.add_argument('--output', required=True)
p.add_argument('--threads', type=int, default=2)
p.add_argument('--stateless', action='store_true')
a = p.parse_args()

tf, bilm = load(threads=a.threads)
# What bench's peer line shows.
import importlib.metadata  # noqa: E402
print(f"version bilm {importlib.metadata.version('bilm')}, tensorflow {tf.__version__ if hasattr(tf, '__version__') else importlib.metadata.version('tensorflow')}", flush=True)
import bilm.model as bm  # noqa: E402

# Record the model dump_bilm_embeddings makes, to reach its state variables.
models = []


class RecordedLM(bm.BidirectionalLanguageModel):
    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        models.append(self)


clock = {'loop_start': None}


class InstrumentedSession(tf.Session):
    """Starts the clock at the first fed run (the first sentence); with --stateless, zeroes the
    LSTM state variables before every sentence, as a fresh model would start."""
    _reset = None

    def run(self, fetches, feed_dict=None, **kw):
        if feed_dict:
            if a.stateless:
                if self._reset is None:
                    graphs = list(models[0]._graphs.values())
                    states = [v for g in graphs for d in ('forward', 'backward')
                              for layer in g.lstm_init_states[d] for v in layer]
                    self._reset = tf.variables_initializer(states)
                super().run(self._reset)
            if clock['loop_start'] is None:
                clock['loop_start'] = time.perf_counter()
        return super().run(fetches, feed_dict=feed_dict, **kw)


bm.BidirectionalLanguageModel = RecordedLM
bm.tf = v1_module_with(Session=InstrumentedSession)

with open(a.input, encoding='utf-8') as f:
    n_tokens = sum(len(line.split()) for line in f)
t0 = time.perf_counter()
bm.dump_bilm_embeddings(a.vocab, a.input, a.options, a.weights, a.output)
t1 = time.perf_counter()
loop = t1 - (clock['loop_start'] or t0)
print(f'sentences_tokens {n_tokens} wall_s {t1 - t0:.2f} loop_s {loop:.2f}')
print(f'tokens_per_s {n_tokens / loop:.1f}')
print(f'peak_rss_mib {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}')
