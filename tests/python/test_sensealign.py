"""The Python module: embeddings equal bin/embed's, errors raise with the tools' messages, one model
serves two threads, senses and nearest neighbours as plain data, per-layer maps."""
import os
import subprocess
import threading

import h5py
import numpy as np
import pytest

import sensealign

from conftest import SENTENCES

TOKENS = [s.split() for s in SENTENCES]


def test_embed_equals_bin_embed(tiny_run, root, tmp_path):
    m = sensealign.load(tiny_run, device="cpu")
    vecs = m.embed(TOKENS, batch_size=3)
    assert len(vecs) == len(TOKENS)
    for v, t in zip(vecs, TOKENS):
        assert v.dtype == np.float32 and v.shape == (m.n_layers, len(t), m.dim)
    inp = tmp_path / "in.txt"
    inp.write_text("".join(s + "\n" for s in SENTENCES))
    out = tmp_path / "out.hdf5"
    subprocess.run([os.path.join(root, "bin", "embed"), "--model", tiny_run, "--input", str(inp), "--output",
                    str(out), "--device", "cpu", "--batch-size", "3"], check=True, cwd=root, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    with h5py.File(out, "r") as f:
        for i, v in enumerate(vecs):
            np.testing.assert_array_equal(v, f[str(i)][()])


def test_bilm_tf_files_give_the_same_vectors(tiny_run):
    run = sensealign.load(tiny_run, device="cpu").embed(TOKENS[:2])
    files = sensealign.load(options=os.path.join(tiny_run, "options.json"),
                            weights=os.path.join(tiny_run, "weights.hdf5"), device="cpu").embed(TOKENS[:2])
    for a, b in zip(run, files):
        np.testing.assert_array_equal(a, b)


def test_errors_raise_with_the_tools_messages(tiny_run, tmp_path):
    with pytest.raises(RuntimeError, match="nowhere"):
        sensealign.load(str(tmp_path / "nowhere"))
    m = sensealign.load(tiny_run, device="cpu")
    with pytest.raises(RuntimeError, match="not in the vocabulary"):
        m.senses("zebra")
    with pytest.raises(RuntimeError, match="batch_size must be positive"):
        m.embed(TOKENS, batch_size=0)
    with pytest.raises(RuntimeError, match="not both"):
        sensealign.load(tiny_run, options="o.json", weights="w.hdf5")


def test_one_model_serves_two_threads(tiny_run):
    # Each thread's result against the same call made alone (a sentence's vectors depend on its
    # batch-mates in the last bits, so the reversed list is its own reference).
    m = sensealign.load(tiny_run, device="cpu")
    alone = m.embed(TOKENS)
    alone_reversed = m.embed(TOKENS[::-1])
    results = [None, None]

    def run(k):
        results[k] = m.embed(TOKENS if k == 0 else TOKENS[::-1])

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(alone, results[0]):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(alone_reversed, results[1]):
        np.testing.assert_array_equal(a, b)


def test_senses_and_nearest_are_plain_data(tiny_run):
    m = sensealign.load(tiny_run, device="cpu")
    senses = m.senses("bank")
    assert {s["direction"] for s in senses} == {"forward", "backward"}
    for s in senses:
        assert 0 <= s["sense"] < 3 and s["score"] > 0 and 0 <= s["selections"] <= s["window"]
    near = m.nearest("bank", k=3)
    assert len(near) == len(senses)
    for n in near:
        cos = [c for _, c in n["neighbours"]]
        assert 0 < len(cos) <= 3
        assert all(-1.0 - 1e-6 <= c <= 1.0 + 1e-6 for c in cos)
        assert cos == sorted(cos, reverse=True)
        assert all(not name.startswith("bank#") for name, _ in n["neighbours"])


def test_aligner_applies_one_map_per_layer(tiny_run, tmp_path):
    m = sensealign.load(tiny_run, device="cpu")
    vecs = m.embed(TOKENS[:2])
    d = m.dim
    for layer in range(m.n_layers):  # layer l is scaled by l + 1
        rows = "".join(" ".join(str(float(layer + 1) if i == j else 0.0) for j in range(d)) + "\n" for i in range(d))
        (tmp_path / f"W.layer{layer}.txt").write_text(f"{d} {d}\n" + rows)
    a = sensealign.Aligner.load(str(tmp_path / "W.layer{layer}.txt"))
    assert a.n_layers == m.n_layers
    mapped = a.apply(vecs)
    for v, w in zip(vecs, mapped):
        for layer in range(m.n_layers):
            np.testing.assert_allclose(w[layer], v[layer] * (layer + 1), rtol=1e-6, atol=1e-7)
    with pytest.raises(RuntimeError, match="expected arrays"):
        a.apply([vecs[0][:1]])


def test_a_hugging_face_bert_directory_loads(root):
    m = sensealign.load(os.path.join(root, "tests", "reference", "bert_small"), device="cpu")
    first = m.embed([["the", "bank", "of", "the", "river"]])[0]
    assert first.shape == (m.n_layers, 5, m.dim) and np.isfinite(first).all()
    # A word's vector is the mean of its pieces' by default, the first piece's on request.
    firsts = sensealign.load(os.path.join(root, "tests", "reference", "bert_small"), device="cpu",
                             pieces="first").embed([["the", "bank", "of", "the", "river"]])[0]
    assert firsts.shape == first.shape
    with pytest.raises(RuntimeError, match="a BERT model; senses and nearest need a SaELMo run directory"):
        m.senses("bank")


def test_the_blas_runs_the_best_kernel_the_cpu_supports():
    """Loading the module chose the GEMM kernel (a generic OpenBLAS core is replaced where the CPU
    has AVX2 or AVX-512), as every tool does."""
    b = sensealign.blas()
    assert b["library"].startswith("OpenBLAS") and b["core"]
    if os.environ.get("OPENBLAS_CORETYPE"):
        pytest.skip("OPENBLAS_CORETYPE chooses the kernel here")
    if b["cpu_level"] == 0:
        pytest.skip("this CPU has no AVX2: a generic kernel is the best it can run")
    assert b["core_level"] == b["cpu_level"], b


def test_four_threads_at_once_give_one_threads_arrays(tiny_run):
    m = sensealign.load(tiny_run, device="cpu")
    alone = m.embed(TOKENS)
    results = [None] * 4

    def run(k):
        results[k] = m.embed(TOKENS)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        assert len(r) == len(alone)
        for a, b in zip(alone, r):
            np.testing.assert_array_equal(a, b)


def test_bad_input_raises_naming_the_problem(tiny_run, tmp_path):
    m = sensealign.load(tiny_run, device="cpu")
    with pytest.raises(TypeError):
        m.embed("the cat sat")          # a string, not a list of token lists
    with pytest.raises(TypeError):
        m.embed([["the", 3]])           # a token that is not a string
    with pytest.raises(RuntimeError, match="sentence 1 is empty"):
        m.embed([["the", "cat"], []])
    with pytest.raises(RuntimeError, match="sentence 0, token 1 is an empty string"):
        m.embed([["the", ""]])
    with pytest.raises(RuntimeError, match="sentence 0, token 0 is 100000 bytes long"):
        m.embed([["x" * 100000]])
    with pytest.raises(RuntimeError, match="weights.hdf5"):
        sensealign.load(options=os.path.join(tiny_run, "options.json"), weights=str(tmp_path / "weights.hdf5"))
    # The model still works after each refusal.
    assert m.embed([["the", "cat"]])[0].shape == (m.n_layers, 2, m.dim)


def test_bert_pieces_and_raw_outputs_agree_with_embed(root):
    """pieces() is what the model reads; bert_outputs() on those ids gives the states embed() pools."""
    d = os.path.join(root, "tests", "reference", "bert_small")
    m = sensealign.load(d, device="cpu", pieces="first")
    words = ["the", "banks", "of", "the", "river"]
    pieces = m.pieces([words])[0]
    assert pieces[:3] == ["the", "bank", "##s"] and len(pieces) == 6
    vocab = {w: i for i, w in enumerate(open(os.path.join(d, "vocab.txt"), encoding="utf-8").read().split("\n"))}
    ids = np.array([[vocab["[CLS]"]] + [vocab[p] for p in pieces] + [vocab["[SEP]"]]], dtype=np.int32)
    out = m.bert_outputs(ids, np.zeros_like(ids), np.ones_like(ids))
    assert len(out["hidden_states"]) == m.n_layers and out["logits"].shape[:2] == ids.shape
    first = [1, 2, 4, 5, 6]  # each word's first piece, after [CLS]
    vecs = m.embed([words])[0]
    for layer in range(m.n_layers):
        np.testing.assert_allclose(out["hidden_states"][layer][0, first], vecs[layer], rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="attention_mask must be"):
        m.bert_outputs(ids, np.zeros_like(ids), np.ones((1, 3), dtype=np.int32))


def test_pieces_need_a_bert_model(tiny_run):
    with pytest.raises(RuntimeError, match="is not a BERT model"):
        sensealign.load(tiny_run, device="cpu").pieces([["the"]])
