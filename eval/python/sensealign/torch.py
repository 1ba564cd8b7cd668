"""AllenNLP's ELMo interface on SenseAlign's engine: code written against
`allennlp.modules.elmo` runs with its import changed to `sensealign.torch`.

    from sensealign.torch import Elmo, batch_to_ids
    elmo = Elmo("options.json", "weights.hdf5", num_output_representations=2, dropout=0.5)
    elmo = Elmo("runs/saelmo", None, 1)                  # or our run directory (ELMo, SaELMo, BERT)
    out = elmo(batch_to_ids([["the", "bank", "."], ["a", "river"]]))
    out["elmo_representations"]   # num_output_representations tensors [batch, tokens, dim]
    out["mask"]                   # [batch, tokens] bool

The biLM is frozen and runs in our engine (`sensealign.load(...).embed`), outside autograd; what
trains is each output's ScalarMix (softmax-normalised layer weights and a scale gamma), followed
by dropout. Differences from AllenNLP: requires_grad=True (fine-tuning the biLM) and
keep_sentence_boundaries=True are refused, and with do_layer_norm the statistics are taken over
the sentences' tokens only (AllenNLP includes its <S> and </S> positions).
"""
from typing import Dict, List, Optional, Sequence, Union

import numpy as np
import torch

from . import _core

__all__ = ["Elmo", "ScalarMix", "batch_to_ids", "ELMoCharacterMapper"]


class ELMoCharacterMapper:
    """bilm-tf's character ids, shifted by one so that 0 is padding (as AllenNLP's mapper): a
    token is <begin word> + its UTF-8 bytes (at most 48) + <end word>, padded to 50."""

    max_word_length = 50
    beginning_of_sentence_character = 256
    end_of_sentence_character = 257
    beginning_of_word_character = 258
    end_of_word_character = 259
    padding_character = 260
    bos_token = "<S>"
    eos_token = "</S>"

    @classmethod
    def _row(cls, chars: Sequence[int]) -> List[int]:
        row = [cls.padding_character] * cls.max_word_length
        row[0] = cls.beginning_of_word_character
        row[1:1 + len(chars)] = chars
        row[1 + len(chars)] = cls.end_of_word_character
        return [c + 1 for c in row]

    @classmethod
    def convert_word_to_char_ids(cls, word: str) -> List[int]:
        if word == cls.bos_token:
            return cls._row([cls.beginning_of_sentence_character])
        if word == cls.eos_token:
            return cls._row([cls.end_of_sentence_character])
        return cls._row(list(word.encode("utf-8")[:cls.max_word_length - 2]))

    @classmethod
    def convert_char_ids_to_word(cls, ids: Sequence[int]) -> bytes:
        """The inverse, as bytes (a word cut at 48 bytes may end inside a character)."""
        ids = [int(i) - 1 for i in ids]
        if ids[1] == cls.beginning_of_sentence_character:
            return cls.bos_token.encode()
        if ids[1] == cls.end_of_sentence_character:
            return cls.eos_token.encode()
        end = ids.index(cls.end_of_word_character) if cls.end_of_word_character in ids else len(ids)
        return bytes(c for c in ids[1:end] if 0 <= c < 256)


# The attribute batch_to_ids sets on its tensor: the tokens as given, so that words longer than 48
# bytes reach the engine whole (a copy or a slice of the tensor loses it and is decoded instead).
_TOKENS_ATTR = "_sensealign_tokens"


def batch_to_ids(batch: List[List[str]]) -> torch.Tensor:
    """[batch, max tokens, 50] character ids (int64, 0 beyond each sentence), as AllenNLP's."""
    longest = max((len(s) for s in batch), default=0)
    ids = np.zeros((len(batch), longest, ELMoCharacterMapper.max_word_length), dtype=np.int64)
    for i, sentence in enumerate(batch):
        for j, word in enumerate(sentence):
            ids[i, j] = ELMoCharacterMapper.convert_word_to_char_ids(word)
    t = torch.from_numpy(ids)
    setattr(t, _TOKENS_ATTR, [list(s) for s in batch])
    return t


class ScalarMix(torch.nn.Module):
    """gamma * sum_k softmax(w)_k * tensor_k, w and gamma scalars (Peters et al. 2018, eq. 1).

    With do_layer_norm each tensor is first normalised by its mean and variance over the unmasked
    positions (all of their dimensions together). Parameters are named as AllenNLP's
    (scalar_parameters.K, gamma), so state dicts carry over."""

    def __init__(self, mixture_size: int, do_layer_norm: bool = False,
                 initial_scalar_parameters: Optional[Sequence[float]] = None, trainable: bool = True) -> None:
        super().__init__()
        self.mixture_size = mixture_size
        self.do_layer_norm = do_layer_norm
        if initial_scalar_parameters is None:
            initial_scalar_parameters = [0.0] * mixture_size
        if len(initial_scalar_parameters) != mixture_size:
            raise ValueError(f"ScalarMix: {len(initial_scalar_parameters)} initial parameters for a mixture of "
                             f"{mixture_size}")
        self.scalar_parameters = torch.nn.ParameterList([
            torch.nn.Parameter(torch.tensor([float(v)], dtype=torch.float32), requires_grad=trainable)
            for v in initial_scalar_parameters
        ])
        self.gamma = torch.nn.Parameter(torch.tensor([1.0], dtype=torch.float32), requires_grad=trainable)

    def forward(self, tensors: List[torch.Tensor], mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        if len(tensors) != self.mixture_size:
            raise ValueError(f"ScalarMix: {len(tensors)} tensors for a mixture of {self.mixture_size}")
        weights = torch.softmax(torch.cat(list(self.scalar_parameters)), dim=0)
        if self.do_layer_norm:
            if mask is None:
                raise ValueError("ScalarMix: do_layer_norm needs the mask")
            tensors = [self._normalise(t, mask) for t in tensors]
        mixed = sum(weights[k] * t for k, t in enumerate(tensors))
        return self.gamma * mixed

    @staticmethod
    def _normalise(t: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        m = mask.to(t.dtype).unsqueeze(-1)
        n = (m.sum() * t.size(-1)).clamp(min=1)
        mean = (t * m).sum() / n
        var = (((t - mean) * m) ** 2).sum() / n
        return (t - mean) / torch.sqrt(var + 1e-12)


class _FrozenBiLm:
    """The engine's model and how to load it again: not a torch Module (nothing in it trains),
    and pickled as its source, not as the compiled object."""

    def __init__(self, source: Dict, model=None):
        self.source = source
        self.model = model if model is not None else self._load(source)

    @staticmethod
    def _load(source: Dict):
        if source.get("path"):
            return _core.load(source["path"], device=source["device"])
        return _core.load(options=source["options"], weights=source["weights"], device=source["device"])

    def __getstate__(self):
        if not self.source:
            raise TypeError("an Elmo built around a loaded sensealign.Model cannot be pickled: build it from the "
                            "model's path instead")
        return {"source": self.source}

    def __setstate__(self, state):
        self.source = state["source"]
        self.model = self._load(self.source)

    def __call__(self, sentences: List[list], positions: torch.Tensor, batch_size: int) -> torch.Tensor:
        """[B, layers, T, dim] float32 on the CPU; positions is the [B, T] bool mask, zeros elsewhere."""
        B, T = positions.shape
        out = np.zeros((B, self.model.n_layers, T, self.model.dim), dtype=np.float32)
        todo = [i for i, s in enumerate(sentences) if len(s) > 0]  # the engine has no empty sentence
        if todo:
            vecs = self.model.embed([sentences[i] for i in todo], batch_size=batch_size)
            where = positions.cpu().numpy()
            for i, v in zip(todo, vecs):
                out[i][:, where[i]] = v
        return torch.from_numpy(out)


class Elmo(torch.nn.Module):
    """AllenNLP's Elmo: num_output_representations trainable scalar mixes of a frozen biLM's
    layers, each followed by dropout.

    The biLM: options_file + weight_file (bilm-tf's files), or options_file alone (weight_file
    None) naming our run directory (ELMo, SaELMo, BERT) or a Hugging Face BERT directory, or
    model= that path, or module= an already loaded sensealign.Model to share. device and
    batch_size are the engine's (sensealign.load's device; sentences per engine batch)."""

    def __init__(self, options_file: Optional[str] = None, weight_file: Optional[str] = None,
                 num_output_representations: int = 1, requires_grad: bool = False, do_layer_norm: bool = False,
                 dropout: float = 0.5, vocab_to_cache: Optional[List[str]] = None,
                 keep_sentence_boundaries: bool = False, scalar_mix_parameters: Optional[List[float]] = None,
                 module=None, *, model: Optional[str] = None, device: str = "auto", batch_size: int = 64) -> None:
        super().__init__()
        if requires_grad:
            raise ValueError("Elmo: the biLM runs in SenseAlign's engine and is frozen; requires_grad=True "
                             "(fine-tuning it) is not supported")
        if keep_sentence_boundaries:
            raise ValueError("Elmo: keep_sentence_boundaries=True is not supported: the engine gives no vectors "
                             "for <S> and </S>")
        if batch_size <= 0:
            raise ValueError(f"Elmo: batch_size must be positive, got {batch_size}")
        given = [x is not None for x in (options_file, model, module)]
        if sum(given) != 1:
            raise ValueError("Elmo: give one of options_file (with weight_file, or a run directory), model= or "
                             "module=")
        if module is not None:
            self._elmo_lstm = module if isinstance(module, _FrozenBiLm) else _FrozenBiLm({}, module)
        elif model is not None:
            self._elmo_lstm = _FrozenBiLm({"path": str(model), "device": device})
        elif weight_file is None:
            self._elmo_lstm = _FrozenBiLm({"path": str(options_file), "device": device})
        else:
            self._elmo_lstm = _FrozenBiLm({"options": str(options_file), "weights": str(weight_file),
                                           "device": device})
        self._batch_size = batch_size
        self._vocab = list(vocab_to_cache) if vocab_to_cache is not None else None
        self._dropout = torch.nn.Dropout(p=dropout)
        n_layers = self._elmo_lstm.model.n_layers
        self._scalar_mixes: List[ScalarMix] = []
        for k in range(num_output_representations):
            # Given mixing weights are fixed (AllenNLP's rule): neither they nor gamma train.
            mix = ScalarMix(n_layers, do_layer_norm=do_layer_norm, initial_scalar_parameters=scalar_mix_parameters,
                            trainable=scalar_mix_parameters is None)
            self.add_module(f"scalar_mix_{k}", mix)
            self._scalar_mixes.append(mix)

    def get_output_dim(self) -> int:
        return self._elmo_lstm.model.dim

    @property
    def num_layers(self) -> int:
        return self._elmo_lstm.model.n_layers

    def _sentences(self, inputs: torch.Tensor, word_inputs: Optional[torch.Tensor]):
        """The tokens of each sentence and the [B, T] mask."""
        if word_inputs is not None and self._vocab is not None:
            ids = word_inputs.cpu()
            mask = ids > 0
            sentences = [[self._vocab[int(w)] for w in row[m]] for row, m in zip(ids, mask)]
            return sentences, mask
        chars = inputs.cpu()
        mask = (chars > 0).any(dim=-1)
        given = getattr(inputs, _TOKENS_ATTR, None)
        if given is not None and len(given) == len(mask) and all(
                len(s) == int(m.sum()) for s, m in zip(given, mask)):
            return given, mask
        rows = chars.numpy()
        sentences = [[ELMoCharacterMapper.convert_char_ids_to_word(rows[i, j]) for j in np.flatnonzero(m)]
                     for i, m in enumerate(mask.numpy())]
        return sentences, mask

    def forward(self, inputs: torch.Tensor, word_inputs: Optional[torch.Tensor] = None
                ) -> Dict[str, Union[torch.Tensor, List[torch.Tensor]]]:
        """inputs: [..., T, 50] character ids (batch_to_ids); word_inputs: [..., T] ids into
        vocab_to_cache (0 is padding), used instead when the vocabulary was given."""
        shape = inputs.shape
        if len(shape) < 3 or shape[-1] != ELMoCharacterMapper.max_word_length:
            raise ValueError(f"Elmo: inputs must be [..., tokens, 50] character ids, got {tuple(shape)}")
        lead = shape[:-1]
        if len(shape) > 3:  # AllenNLP flattens the leading dimensions and restores them after
            inputs = inputs.reshape(-1, shape[-2], shape[-1])  # (the tokens are decoded from it)
            if word_inputs is not None:
                word_inputs = word_inputs.reshape(-1, word_inputs.shape[-1])
        sentences, mask = self._sentences(inputs, word_inputs)
        layers = self._elmo_lstm(sentences, mask, self._batch_size)
        like = self._scalar_mixes[0].gamma if self._scalar_mixes else None
        device = like.device if like is not None else inputs.device
        dtype = like.dtype if like is not None else torch.float32
        layers = layers.to(device=device, dtype=dtype)
        mask = mask.to(device)
        per_layer = [layers[:, k] for k in range(layers.size(1))]
        keep = mask.unsqueeze(-1).to(dtype)
        representations = []
        for mix in self._scalar_mixes:
            # Positions beyond a sentence stay zero (layer norm would shift them).
            r = mix(per_layer, mask) * keep
            representations.append(self._dropout(r))
        if len(shape) > 3:
            representations = [r.reshape(*lead, r.size(-1)) for r in representations]
            mask = mask.reshape(lead)
        return {"elmo_representations": representations, "mask": mask}
