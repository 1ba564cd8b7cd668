"""sensealign.flair: the engine's vectors as Flair token embeddings in each layers mode, inside a
SequenceTagger and a TextClassifier that train, save and load back (the file keeps the model's
path, not the engine). Needs Flair (build/peers/flair)."""
import copy

import numpy as np
import pytest

flair = pytest.importorskip("flair", reason="Flair is not installed here (make peers: build/peers/flair)")
torch = pytest.importorskip("torch")

import sensealign  # noqa: E402
from flair.data import Corpus, Sentence  # noqa: E402
from flair.datasets import FlairDatapointDataset  # noqa: E402
from flair.embeddings import DocumentPoolEmbeddings, StackedEmbeddings  # noqa: E402
from flair.models import SequenceTagger, TextClassifier  # noqa: E402
from flair.trainers import ModelTrainer  # noqa: E402
from sensealign.flair import SenseAlignEmbeddings  # noqa: E402

from conftest import SENTENCES  # noqa: E402

flair.device = torch.device("cpu")
TOKENS = [s.split() for s in SENTENCES]


def sentences():
    return [Sentence(t) for t in TOKENS]


@pytest.mark.parametrize("layers, combine", [
    ("all", lambda v: np.concatenate(list(v), axis=1)),
    ("top", lambda v: v[-1]),
    ("average", lambda v: v.mean(axis=0)),
    ([0, 2], lambda v: np.concatenate([v[0], v[2]], axis=1)),
    ("0,2", lambda v: np.concatenate([v[0], v[2]], axis=1)),
    ([-1], lambda v: v[2]),
    ([0.5, 0.25, 0.25], lambda v: 0.5 * v[0] + 0.25 * v[1] + 0.25 * v[2]),
])
def test_each_layers_mode_gives_the_engines_vectors(tiny_run, layers, combine):
    emb = SenseAlignEmbeddings(tiny_run, layers=layers, device="cpu")
    ref = sensealign.load(tiny_run, device="cpu").embed(TOKENS)
    ss = sentences()
    emb.embed(ss)
    for s, v in zip(ss, ref):
        want = combine(v)
        assert emb.embedding_length == want.shape[1]
        got = torch.stack([t.get_embedding([emb.name]) for t in s]).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert emb.static_embeddings and not list(emb.parameters())


def test_bad_layers_and_sources_are_refused(tiny_run):
    with pytest.raises(ValueError, match="out of range"):
        SenseAlignEmbeddings(tiny_run, layers=[3], device="cpu")
    with pytest.raises(ValueError, match="2 mix weights for a model of 3 layers"):
        SenseAlignEmbeddings(tiny_run, layers=[0.5, 0.5], device="cpu")
    with pytest.raises(ValueError, match="layers must be"):
        SenseAlignEmbeddings(tiny_run, layers="bottom", device="cpu")
    with pytest.raises(ValueError, match="give a model path"):
        SenseAlignEmbeddings()


def test_bilm_tf_files_and_stacks(tiny_run):
    files = SenseAlignEmbeddings(options=f"{tiny_run}/options.json", weights=f"{tiny_run}/weights.hdf5",
                                 layers="top", device="cpu", name="files")
    run = SenseAlignEmbeddings(tiny_run, layers="average", device="cpu", name="run")
    stack = StackedEmbeddings([run, files])
    ss = sentences()
    stack.embed(ss)
    ref = sensealign.load(tiny_run, device="cpu").embed(TOKENS)
    for s, v in zip(ss, ref):
        got = torch.stack([t.get_embedding() for t in s]).numpy()
        np.testing.assert_allclose(got, np.concatenate([v.mean(axis=0), v[-1]], axis=1), rtol=1e-5, atol=1e-6)
    # Pickled (deepcopy, torch.save of a whole module) as its paths; the engine loads again.
    twin = copy.deepcopy(files)
    assert twin._engine is None
    ss2 = sentences()
    twin.embed(ss2)
    for a, b in zip(ss, ss2):
        for x, y in zip(a, b):
            torch.testing.assert_close(x.get_embedding(["files"]), y.get_embedding(["files"]))


def ner_corpus():
    def tagged(tokens, spans):
        s = Sentence(tokens)
        for start, end, tag in spans:
            s[start:end].add_label("ner", tag)
        return s

    train = [
        tagged(TOKENS[2], [(1, 2, "LOC"), (4, 5, "LOC")]),  # the bank of the river
        tagged(TOKENS[3], [(4, 5, "ORG")]),  # she went to the bank
        tagged(TOKENS[0], [(1, 2, "ANIMAL")]),
        tagged(TOKENS[1], [(1, 2, "ANIMAL"), (5, 6, "LOC")]),
    ]
    dev = [tagged(TOKENS[0], [(1, 2, "ANIMAL")])]
    test = [tagged(TOKENS[2], [(1, 2, "LOC"), (4, 5, "LOC")])]
    return Corpus(FlairDatapointDataset(train), FlairDatapointDataset(dev), FlairDatapointDataset(test))


def predictions(model):
    """Each sentence's predicted spans (text, tag, score), then every token's scores of every tag."""
    ss = sentences()
    model.predict(ss, label_name="pred")
    spans = [[(lab.data_point.text, lab.value, lab.score) for lab in s.get_labels("pred")] for s in ss]
    ss = sentences()
    model.predict(ss, label_name="pred", return_probabilities_for_all_classes=True)
    scores = [[(lab.value, lab.score) for t in s for lab in t.get_tags_proba_dist("pred")] for s in ss]
    return spans, scores


def close(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert [v for v, _ in x] == [v for v, _ in y]
        np.testing.assert_allclose([p for _, p in x], [p for _, p in y], rtol=1e-5, atol=1e-6)


def test_a_sequence_tagger_trains_saves_and_loads(tiny_run, tmp_path):
    torch.manual_seed(0)
    corpus = ner_corpus()
    tags = corpus.make_label_dictionary("ner", add_unk=False)
    emb = SenseAlignEmbeddings(tiny_run, layers="all", device="cpu", batch_size=2)
    tagger = SequenceTagger(hidden_size=8, embeddings=emb, tag_dictionary=tags, tag_type="ner", use_crf=True)
    before = {k: v.clone() for k, v in tagger.state_dict().items()}
    ModelTrainer(tagger, corpus).train(tmp_path, max_epochs=2, mini_batch_size=2, learning_rate=0.1,
                                       create_file_logs=False, create_loss_file=False)
    assert any(not torch.equal(v, tagger.state_dict()[k]) for k, v in before.items())
    # (The trainer ends on the best epoch's weights, which it loaded back from best-model.pt.)
    path = tmp_path / "tagger.pt"
    tagger.save(path)
    state = torch.load(path, map_location="cpu", weights_only=False)
    assert state["embeddings"]["__cls__"] == "SenseAlignEmbeddings"
    assert state["embeddings"]["model"] == emb.model_path and state["embeddings"]["layers"] == "all"
    loaded = SequenceTagger.load(path)
    assert isinstance(loaded.embeddings, SenseAlignEmbeddings) and loaded.embeddings.name == emb.name
    tagger.eval()
    (spans_a, scores_a), (spans_b, scores_b) = predictions(tagger), predictions(loaded)
    assert [[x[:2] for x in s] for s in spans_a] == [[x[:2] for x in s] for s in spans_b]
    close([[x[1:] for x in s] for s in spans_a], [[x[1:] for x in s] for s in spans_b])
    close(scores_a, scores_b)
    assert any(scores_a)


def test_a_text_classifier_trains_saves_and_loads(tiny_run, tmp_path):
    torch.manual_seed(0)
    train = [Sentence(t).add_label("topic", "animal" if i in (0, 1) else "money") for i, t in enumerate(TOKENS)]
    corpus = Corpus(FlairDatapointDataset(train), FlairDatapointDataset(train[:1]), FlairDatapointDataset(train[2:3]))
    labels = corpus.make_label_dictionary("topic", add_unk=False)
    doc = DocumentPoolEmbeddings([SenseAlignEmbeddings(tiny_run, layers=[0.2, 0.3, 0.5], device="cpu")])
    clf = TextClassifier(doc, label_type="topic", label_dictionary=labels)
    ModelTrainer(clf, corpus).train(tmp_path, max_epochs=1, mini_batch_size=2, learning_rate=0.1,
                                    create_file_logs=False, create_loss_file=False)
    clf.save(tmp_path / "classifier.pt")
    loaded = TextClassifier.load(tmp_path / "classifier.pt")
    clf.eval()
    a, b = sentences(), sentences()
    clf.predict(a, return_probabilities_for_all_classes=True)
    loaded.predict(b, return_probabilities_for_all_classes=True)
    for x, y in zip(a, b):
        assert len(x.get_labels("topic")) == 2  # both classes, with their probabilities
        assert [lab.value for lab in x.get_labels("topic")] == [lab.value for lab in y.get_labels("topic")]
        np.testing.assert_allclose([lab.score for lab in x.get_labels("topic")],
                                   [lab.score for lab in y.get_labels("topic")], rtol=1e-5, atol=1e-6)
