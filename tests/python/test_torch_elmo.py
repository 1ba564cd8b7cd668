"""sensealign.torch, AllenNLP's Elmo on our engine: the scalar mix of the engine's layers and its
gradients against an explicit formula, masks and shapes of ragged batches, bilm-tf files as
AllenNLP loads them, a frozen biLM under a mix that trains. Needs PyTorch (build/peers/torch)."""
import copy
import io
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed here (make peers: build/peers/torch)")

import sensealign  # noqa: E402
from sensealign.torch import Elmo, ELMoCharacterMapper, ScalarMix, batch_to_ids  # noqa: E402

from conftest import SENTENCES  # noqa: E402

TOKENS = [s.split() for s in SENTENCES]
RAGGED = [TOKENS[1], ["the", "bank"], TOKENS[3], ["cat"]]


def reference(run, tokens):
    return sensealign.load(run, device="cpu").embed(tokens)


def elmo(run, **kw):
    kw.setdefault("dropout", 0.0)
    return Elmo(run, None, kw.pop("n", 1), device="cpu", **kw)


def test_fresh_mix_is_the_mean_of_the_layers(tiny_run):
    e = elmo(tiny_run, n=2)
    out = e(batch_to_ids(RAGGED))
    ref = reference(tiny_run, RAGGED)
    assert len(out["elmo_representations"]) == 2
    for rep in out["elmo_representations"]:
        assert rep.dtype == torch.float32
        for i, v in enumerate(ref):
            n = v.shape[1]
            np.testing.assert_allclose(rep[i, :n].detach().numpy(), v.mean(axis=0), rtol=1e-5, atol=1e-6)
            assert (rep[i, n:] == 0).all()


def test_mix_and_its_gradients_against_the_formula(tiny_run):
    torch.manual_seed(0)
    e = elmo(tiny_run)
    mix = e.scalar_mix_0
    w = np.array([0.3, -1.2, 0.8])
    gamma = 1.7
    with torch.no_grad():
        for k, p in enumerate(mix.scalar_parameters):
            p.fill_(w[k])
        mix.gamma.fill_(gamma)
    out = e(batch_to_ids(RAGGED))["elmo_representations"][0]
    R = torch.randn(out.shape, dtype=torch.float32)
    loss = (out * R).sum()
    loss.backward()

    # The same in float64 numpy: out = gamma * sum_k s_k L_k with s = softmax(w), so
    # dloss/dgamma = sum_k s_k <R, L_k> and dloss/dw_j = gamma * s_j * (<R, L_j> - sum_k s_k <R, L_k>).
    ref = reference(tiny_run, RAGGED)
    B, T, D = out.shape
    L = np.zeros((3, B, T, D))
    for i, v in enumerate(ref):
        L[:, i, :v.shape[1]] = v
    s = np.exp(w) / np.exp(w).sum()
    expected = gamma * np.tensordot(s, L, axes=1)
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-5, atol=1e-6)
    r = R.double().numpy()
    dots = np.array([(r * L[k]).sum() for k in range(3)])
    np.testing.assert_allclose(mix.gamma.grad.item(), (s * dots).sum(), rtol=1e-4, atol=1e-5)
    dw = gamma * s * (dots - (s * dots).sum())
    got = np.array([p.grad.item() for p in mix.scalar_parameters])
    np.testing.assert_allclose(got, dw, rtol=1e-4, atol=1e-5)


def test_layer_norm_uses_the_unpadded_positions(tiny_run):
    e = elmo(tiny_run, do_layer_norm=True)
    out = e(batch_to_ids(RAGGED))["elmo_representations"][0].detach().numpy()
    ref = reference(tiny_run, RAGGED)
    normed = []
    for k in range(3):  # each layer's mean and variance over every real token and dimension
        x = np.concatenate([v[k] for v in ref]).astype(np.float64)
        normed.append((x - x.mean()) / np.sqrt(x.var() + 1e-12))
    expected = np.mean(normed, axis=0)
    at = 0
    for i, v in enumerate(ref):
        n = v.shape[1]
        np.testing.assert_allclose(out[i, :n], expected[at:at + n], rtol=1e-4, atol=1e-5)
        assert (out[i, n:] == 0).all()
        at += n


def test_masks_and_shapes_of_a_ragged_batch(tiny_run):
    e = elmo(tiny_run, n=3)
    batch = RAGGED + [[]]  # an empty sentence is all padding
    ids = batch_to_ids(batch)
    T = max(len(s) for s in batch)
    assert ids.shape == (5, T, 50) and ids.dtype == torch.int64
    out = e(ids)
    mask = out["mask"]
    assert mask.dtype == torch.bool and mask.shape == (5, T)
    assert mask.sum(dim=1).tolist() == [len(s) for s in batch]
    assert len(out["elmo_representations"]) == 3
    for rep in out["elmo_representations"]:
        assert rep.shape == (5, T, e.get_output_dim())
        assert (rep[~mask] == 0).all() and (rep[4] == 0).all()
    assert e.get_output_dim() == sensealign.load(tiny_run, device="cpu").dim
    # More leading dimensions are flattened and restored, as AllenNLP does.
    four = e(ids[:4].reshape(2, 2, T, 50))
    assert four["mask"].shape == (2, 2, T)
    np.testing.assert_allclose(four["elmo_representations"][0].reshape(4, T, -1).detach().numpy(),
                               out["elmo_representations"][0][:4].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_character_ids_are_allennlps(tiny_run):
    ids = batch_to_ids([["a", "é"], ["<S>"]])
    m = ELMoCharacterMapper
    assert ids[0, 0, :4].tolist() == [m.beginning_of_word_character + 1, ord("a") + 1, m.end_of_word_character + 1,
                                      m.padding_character + 1]
    assert ids[0, 1, 1:3].tolist() == [0xC3 + 1, 0xA9 + 1]  # UTF-8 bytes
    assert ids[1, 0, :3].tolist() == [259, 257, 260]  # <S>: the begin-sentence character
    assert (ids[1, 1] == 0).all()
    # A word of more than 48 bytes is cut in the ids but reaches the engine whole when the tensor
    # came from batch_to_ids; decoded ids (a copy) give the cut word.
    long = "x" * 60
    assert m.convert_char_ids_to_word(batch_to_ids([[long]])[0, 0].tolist()) == b"x" * 48
    e = elmo(tiny_run)
    ids = batch_to_ids([["the", long, "bank"]])
    whole = e(ids)["elmo_representations"][0][0].detach().numpy()
    cut = e(ids.clone())["elmo_representations"][0][0].detach().numpy()
    np.testing.assert_allclose(whole, reference(tiny_run, [["the", long, "bank"]])[0].mean(axis=0), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(cut, reference(tiny_run, [["the", "x" * 48, "bank"]])[0].mean(axis=0), rtol=1e-5,
                               atol=1e-6)


def test_loads_from_bilm_tf_files_as_allennlp(tiny_run):
    options, weights = os.path.join(tiny_run, "options.json"), os.path.join(tiny_run, "weights.hdf5")
    files = Elmo(options, weights, 1, dropout=0.0, device="cpu")  # AllenNLP's positional order
    run = elmo(tiny_run)
    ids = batch_to_ids(RAGGED)
    a = files(ids)["elmo_representations"][0]
    b = run(ids)["elmo_representations"][0]
    torch.testing.assert_close(a, b)
    by_keyword = Elmo(options_file=options, weight_file=weights, num_output_representations=1, dropout=0.0,
                      device="cpu")
    torch.testing.assert_close(by_keyword(ids)["elmo_representations"][0], a)
    shared = Elmo(module=sensealign.load(tiny_run, device="cpu"), num_output_representations=1, dropout=0.0)
    torch.testing.assert_close(shared(ids)["elmo_representations"][0], b)
    with pytest.raises(ValueError, match="frozen"):
        Elmo(options, weights, 1, requires_grad=True)
    with pytest.raises(ValueError, match="keep_sentence_boundaries"):
        Elmo(options, weights, 1, keep_sentence_boundaries=True)
    with pytest.raises(RuntimeError):
        Elmo(os.path.join(tiny_run, "nowhere"), None, 1, device="cpu")


def test_word_inputs_with_a_cached_vocabulary(tiny_run):
    vocab = ["<pad>"] + sorted({w for s in RAGGED for w in s})
    e = elmo(tiny_run, vocab_to_cache=vocab)
    ids = batch_to_ids(RAGGED)
    words = torch.zeros(ids.shape[:2], dtype=torch.long)
    for i, s in enumerate(RAGGED):
        words[i, :len(s)] = torch.tensor([vocab.index(w) for w in s])
    a = e(ids, words)
    b = e(ids)
    torch.testing.assert_close(a["elmo_representations"][0], b["elmo_representations"][0])
    assert torch.equal(a["mask"], b["mask"])


def test_the_bilm_is_frozen_and_the_mix_trains(tiny_run):
    torch.manual_seed(1)
    e = elmo(tiny_run, n=2, dropout=0.5)
    names = {n for n, _ in e.named_parameters()}
    assert names == {f"scalar_mix_{k}.{p}" for k in range(2)
                     for p in ("scalar_parameters.0", "scalar_parameters.1", "scalar_parameters.2", "gamma")}
    assert all(p.requires_grad for p in e.parameters())
    head = torch.nn.Linear(e.get_output_dim(), 2)
    opt = torch.optim.SGD(list(e.parameters()) + list(head.parameters()), lr=0.5)
    ids = batch_to_ids(RAGGED)
    before = [p.detach().clone() for p in e.parameters()]
    e.train()
    out = e(ids)
    rep = out["elmo_representations"][0]
    assert rep.requires_grad and rep.grad_fn is not None
    # The engine's layers are leaves outside autograd: nothing upstream of the mix asks for a gradient.
    layers = e._elmo_lstm(RAGGED, out["mask"], 64)
    assert not layers.requires_grad
    target = torch.zeros(out["mask"].shape, dtype=torch.long)
    target[:, ::2] = 1
    logits = head(rep)[out["mask"]]
    loss = torch.nn.functional.cross_entropy(logits, target[out["mask"]])
    opt.zero_grad()
    loss.backward()
    opt.step()
    after = list(e.parameters())
    changed = [not torch.equal(a, b) for a, b in zip(before, after)]
    assert all(changed[:4])  # the first mix's three weights and gamma moved
    assert not any(changed[4:])  # the second output was not in the loss
    # Dropout acts in training mode only.
    e.eval()
    x = e(ids)["elmo_representations"][0]
    torch.testing.assert_close(x, e(ids)["elmo_representations"][0])


def test_fixed_mix_parameters_do_not_train(tiny_run):
    e = elmo(tiny_run, scalar_mix_parameters=[0.0, -9e9, -9e9])  # only layer 0 (the token vectors)
    assert not any(p.requires_grad for p in e.parameters())
    out = e(batch_to_ids(RAGGED))["elmo_representations"][0]
    for i, v in enumerate(reference(tiny_run, RAGGED)):
        np.testing.assert_allclose(out[i, :v.shape[1]].numpy(), v[0], rtol=1e-5, atol=1e-6)
    mix = ScalarMix(3, initial_scalar_parameters=[1.0, 2.0, 3.0])
    assert [p.item() for p in mix.scalar_parameters] == [1.0, 2.0, 3.0] and mix.gamma.item() == 1.0


def test_pickles_as_its_source(tiny_run):
    e = elmo(tiny_run)
    with torch.no_grad():
        e.scalar_mix_0.gamma.fill_(2.5)
    ids = batch_to_ids(RAGGED)
    buf = io.BytesIO()
    torch.save(e, buf)
    buf.seek(0)
    back = torch.load(buf, weights_only=False)
    torch.testing.assert_close(back(ids)["elmo_representations"][0], e(ids)["elmo_representations"][0])
    torch.testing.assert_close(copy.deepcopy(e)(ids)["elmo_representations"][0], e(ids)["elmo_representations"][0])
    state = e.state_dict()
    fresh = elmo(tiny_run)
    fresh.load_state_dict(state)
    assert fresh.scalar_mix_0.gamma.item() == 2.5
