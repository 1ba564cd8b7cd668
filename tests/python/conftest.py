"""Shared fixtures of the Python module's tests: the module from bin/, and a tiny SaELMo run
trained by bin/train (a few seconds on 2 cores; no shared data needed)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bin"))

SENTENCES = [
    "the cat sat on the mat .",
    "a dog ran to the park and back .",
    "the bank of the river is green .",
    "she went to the bank to get money .",
]


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """A SaELMo run directory with every sense live (3 senses, warm-up of 2 steps)."""
    d = tmp_path_factory.mktemp("tiny")
    corpus = d / "corpus.txt"
    corpus.write_text("".join(SENTENCES[i % 4] + "\n" for i in range(80)))
    cfg = d / "tiny.cfg"
    cfg.write_text(
        f'train_prefix = "{corpus}"\nrun_dir = "{d}/run"\n'
        "batch_size = 4\nunroll_steps = 6\nn_negative_samples_batch = 8\nn_steps = 8\nseed = 3\n"
        'device = "cpu"\nn_context = 3\ncontextual_warmup = 2\ncluster_proj_dim = 4\npca_sample = 40\n'
        "pca_every = 3\n[char_cnn]\nembedding.dim = 4\nfilters = [[1, 8], [2, 8]]\nn_highway = 1\n"
        "[lstm]\ndim = 16\nprojection_dim = 8\nn_layers = 2\n"
    )
    subprocess.run([os.path.join(ROOT, "bin", "train"), str(cfg)], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    return str(d / "run")
