"""SenseAlign: sense-aware contextual embeddings (ELMo, SaELMo, BERT) as numpy arrays.

    import sensealign
    m = sensealign.load("runs/saelmo-small")     # a run directory, a Hugging Face BERT directory,
                                                 # or options="options.json", weights="weights.hdf5"
    vecs = m.embed([["the", "bank", "."]])       # one float32 [layers, tokens, dim] per sentence

For Flair: sensealign.flair.SenseAlignEmbeddings; for code written against AllenNLP's Elmo:
sensealign.torch.Elmo and sensealign.torch.batch_to_ids. Those two import flair / torch, so they
load only when asked for.
"""
from ._core import Aligner, Model, blas, load  # noqa: F401  (the compiled engine)

__all__ = ["Aligner", "Model", "blas", "load"]
