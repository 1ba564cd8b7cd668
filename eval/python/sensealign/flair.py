"""Our models as Flair token embeddings (static: computed by the engine, not fine-tuned).

    import sensealign.flair                      # registers the class: import it before Model.load
    from sensealign.flair import SenseAlignEmbeddings
    emb = SenseAlignEmbeddings("runs/saelmo", layers="all")    # 3 * dim per token
    tagger = SequenceTagger(hidden_size=256, embeddings=emb, tag_dictionary=..., tag_type="ner")

layers: "all" concatenates the layers, "top" is the last layer, "average" their mean; a list of
ints concatenates those layers (negative counts from the top); a list of floats, one per layer,
is a fixed weighted sum (the weights as given, not normalised). A saved tagger keeps the model's
path (absolute) and these settings, never the engine's object: loading it loads the model again.
"""
import os
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np
import torch
from flair.data import Sentence
from flair.embeddings import TokenEmbeddings
from flair.embeddings.base import register_embeddings

from . import _core

__all__ = ["SenseAlignEmbeddings"]

Layers = Union[str, Sequence[int], Sequence[float]]


def _parse_layers(layers: Layers, n_layers: int):
    """("concat", [indices]) or ("weights", [one float per layer])."""
    if isinstance(layers, str):
        if layers == "all":
            return "concat", list(range(n_layers))
        if layers == "top":
            return "concat", [n_layers - 1]
        if layers == "average":
            return "weights", [1.0 / n_layers] * n_layers
        try:  # "0,2" as Flair's transformer embeddings write layer lists
            layers = [int(x) for x in layers.split(",")]
        except ValueError:
            raise ValueError(f"SenseAlignEmbeddings: layers must be 'all', 'top', 'average', a list of layer "
                             f"indices or of {n_layers} weights, got {layers!r}") from None
    values = list(layers)
    if not values:
        raise ValueError("SenseAlignEmbeddings: an empty list of layers")
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        bad = [v for v in values if not -n_layers <= v < n_layers]
        if bad:
            raise ValueError(f"SenseAlignEmbeddings: layers {bad} out of range for a model of {n_layers} layers")
        return "concat", [int(v) % n_layers for v in values]
    if len(values) != n_layers:
        raise ValueError(f"SenseAlignEmbeddings: {len(values)} mix weights for a model of {n_layers} layers")
    return "weights", [float(v) for v in values]


@register_embeddings
class SenseAlignEmbeddings(TokenEmbeddings):
    """A SenseAlign model (our ELMo / SaELMo / BERT run directory, a Hugging Face BERT directory,
    or bilm-tf's options= and weights=) as static Flair token embeddings."""

    def __init__(self, model: Optional[str] = None, layers: Layers = "all", name: Optional[str] = None,
                 batch_size: int = 64, device: str = "auto", options: Optional[str] = None,
                 weights: Optional[str] = None) -> None:
        super().__init__()
        if (model is None) == (options is None and weights is None) or (options is None) != (weights is None):
            raise ValueError("SenseAlignEmbeddings: give a model path, or options= and weights=")
        if batch_size <= 0:
            raise ValueError(f"SenseAlignEmbeddings: batch_size must be positive, got {batch_size}")
        # Absolute paths: a saved tagger is loaded from elsewhere.
        self.model_path = os.path.abspath(model) if model is not None else None
        self.options = os.path.abspath(options) if options is not None else None
        self.weights = os.path.abspath(weights) if weights is not None else None
        self.device_name = device
        self.batch_size = batch_size
        self._engine = None
        engine = self.engine
        self.layers = layers if isinstance(layers, str) else [x.item() if isinstance(x, np.generic) else x
                                                               for x in layers]
        self._mode, self._spec = _parse_layers(self.layers, engine.n_layers)
        self._dim = engine.dim
        self._length = self._dim * (len(self._spec) if self._mode == "concat" else 1)
        source = os.path.basename(os.path.normpath(self.model_path or self.weights))
        self.name = name or f"sensealign-{source}-{self.layers if isinstance(self.layers, str) else self._spec}"
        self.static_embeddings = True
        self.eval()

    @property
    def engine(self):
        """The loaded model (loaded again after unpickling)."""
        if self._engine is None:
            if self.model_path is not None:
                self._engine = _core.load(self.model_path, device=self.device_name)
            else:
                self._engine = _core.load(options=self.options, weights=self.weights, device=self.device_name)
        return self._engine

    @property
    def embedding_length(self) -> int:
        return self._length

    def _vectors(self, v: np.ndarray) -> np.ndarray:
        """[layers, tokens, dim] -> [tokens, embedding_length]."""
        if self._mode == "concat":
            return np.ascontiguousarray(v[self._spec].transpose(1, 0, 2).reshape(v.shape[1], -1))
        return np.tensordot(np.asarray(self._spec, dtype=np.float32), v, axes=1).astype(np.float32)

    def _add_embeddings_internal(self, sentences: List[Sentence]) -> List[Sentence]:
        todo = [s for s in sentences if len(s) > 0]
        if not todo:
            return sentences
        vecs = self.engine.embed([[t.text for t in s] for s in todo], batch_size=self.batch_size)
        for sentence, v in zip(todo, vecs):
            e = torch.from_numpy(self._vectors(v))
            for j, token in enumerate(sentence):
                token.set_embedding(self.name, e[j])
        return sentences

    def to_params(self) -> Dict[str, Any]:
        return {"model": self.model_path, "options": self.options, "weights": self.weights,
                "layers": self.layers, "name": self.name, "batch_size": self.batch_size,
                "device": self.device_name}

    @classmethod
    def from_params(cls, params: Dict[str, Any]) -> "SenseAlignEmbeddings":
        return cls(**params)

    # Pickling (torch.save of a whole model, copy.deepcopy) keeps the paths, not the engine.
    def __getstate__(self):
        state = self.__dict__.copy()
        state["_engine"] = None
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._engine = None

    def extra_repr(self) -> str:
        return f"model={self.model_path or self.weights!r}, layers={self.layers!r}, length={self._length}"
