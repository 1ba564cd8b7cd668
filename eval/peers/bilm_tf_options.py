#!/usr/bin/env python3
"""Write bilm-tf's training options.json (the keys bin/train_elmo.py builds) and, optionally, a
vocabulary, for one of our configs and a corpus.

Usage: bilm_tf_options.py --config configs/bench-small.cfg --corpus FILE --out OPTIONS.json
                          [--vocab-out VOCAB.txt] [--min-count N=1]

The vocabulary is every word of the corpus seen at least N times (default 1, as the PyTorch peer
and bin/bench train), frequency sorted (ties in first-seen order) after <S> </S> <UNK>.
n_tokens_vocab is its size; n_train_tokens the corpus's word count.
"""
import argparse
import collections
import json
import tomllib

p = argparse.ArgumentParser()
p.add_argument('--config', required=True)
p.add_argument('--corpus', required=True)
p.add_argument('--out', required=True)
p.add_argument('--vocab-out')
p.add_argument('--min-count', type=int, default=1)
a = p.parse_args()

with open(a.config, 'rb') as f:
    cfg = tomllib.load(f)
cnt = collections.Counter()
with open(a.corpus, encoding='utf-8') as f:
    for line in f:
        cnt.update(line.split())
words = [w for w, c in cnt.most_common() if c >= a.min_count and w not in ('<S>', '</S>', '<UNK>')]
vocab = ['<S>', '</S>', '<UNK>'] + words
if a.vocab_out:
    with open(a.vocab_out, 'w', encoding='utf-8') as f:
        f.write('\n'.join(vocab) + '\n')

cc, ls = cfg['char_cnn'], cfg['lstm']
options = {
    'bidirectional': True,
    'char_cnn': {'activation': cc['activation'], 'embedding': {'dim': cc['embedding']['dim']},
                 'filters': cc['filters'], 'max_characters_per_token': cc['max_characters_per_token'],
                 'n_characters': cc['n_characters'], 'n_highway': cc['n_highway']},
    'dropout': cfg.get('dropout', 0.1),
    'lstm': {'cell_clip': ls['cell_clip'], 'dim': ls['dim'], 'n_layers': ls['n_layers'],
             'proj_clip': ls['proj_clip'], 'projection_dim': ls['projection_dim'],
             'use_skip_connections': ls['use_skip_connections']},
    'all_clip_norm_val': cfg.get('all_clip_norm_val', 10.0),
    'learning_rate': cfg.get('learning_rate', 0.2),
    'n_epochs': cfg.get('n_epochs', 10),
    'n_train_tokens': sum(cnt.values()),
    'batch_size': cfg['batch_size'],
    'n_tokens_vocab': len(vocab),
    'unroll_steps': cfg['unroll_steps'],
    'n_negative_samples_batch': cfg['n_negative_samples_batch'],
}
with open(a.out, 'w') as f:
    json.dump(options, f, indent=1)
print(f'{a.out}: vocab {len(vocab)}, {options["n_train_tokens"]} tokens')
