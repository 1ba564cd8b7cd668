#!/usr/bin/env python3
"""Zero-shot cross-lingual NER with Flair's SequenceTagger over our frozen vectors: the peer of
`bin/xling_eval ner` (eval/peers/flair_ner.sh runs both and compares them).

Trains Flair's BiLSTM-CRF on English CoNLL-2003 over sensealign.flair.SenseAlignEmbeddings, picks
the best epoch on the English dev set as Flair's ModelTrainer does, then tags each --test file with
that model. Every score here is conlleval.pl's span F1 on `token gold guess` lines (IOB2), the same
script that scores xling_eval's --predictions, so the two sides are measured identically.

    PYTHONPATH=bin build/peers/flair/bin/python eval/peers/flair_ner.py --model RUN \
        --train eng.train --dev eng.testa --test de=deu.testa --test es=esp.testa \
        --runs 5 --max-epochs 2 --work build/peers/flair_ner/flair

Prints one line per language, English dev first:
    flair ner LANG: F1 mean ± std over N runs (runs: a, b, ...)
and writes WORK/flair_ner.json (settings, each run's scores and times) and
WORK/pred/LANG.runK.txt (what conlleval.pl read).
"""
import argparse
import json
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


# ---- CoNLL files ---------------------------------------------------------------------------------

def read_conll(path):
    """[(tokens, tags)]: first column the word, last the tag; blank lines and -DOCSTART- lines end a
    sentence (DOCSTART is a document break, not a sentence, as our reader treats it). UTF-8, or else
    ISO-8859-1 (CoNLL-2003 German)."""
    raw = open(path, "rb").read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("iso-8859-1")
    sentences, tokens, tags = [], [], []
    for line in text.splitlines():
        cols = line.split()
        if not cols or cols[0] == "-DOCSTART-":
            if tokens:
                sentences.append((tokens, tags))
            tokens, tags = [], []
            continue
        if len(cols) < 2:
            raise SystemExit(f"{path}: a line with one column: {line!r}")
        tokens.append(cols[0])
        tags.append(cols[-1])
    if tokens:
        sentences.append((tokens, tags))
    return sentences


def to_iob2(tags):
    """IOB1 (I- opens an entity unless it continues one of its type) to IOB2; IOB2 passes unchanged."""
    out, prev = [], "O"
    for t in tags:
        if t.startswith("I-") and (prev == "O" or prev[2:] != t[2:]):
            t = "B-" + t[2:]
        out.append(t)
        prev = t
    return out


def spans_of(tags):
    """(start, end, type) of IOB2 tags, end exclusive."""
    spans, start, kind = [], None, None
    for i, t in enumerate(tags + ["O"]):
        if start is not None and not (t.startswith("I-") and t[2:] == kind):
            spans.append((start, i, kind))
            start = None
        if t.startswith("B-") or (t.startswith("I-") and start is None):
            start, kind = i, t[2:]
    return spans


def write_columns(sentences, path):
    with open(path, "w", encoding="utf-8") as f:
        for tokens, tags in sentences:
            f.writelines(f"{w} {t}\n" for w, t in zip(tokens, tags))
            f.write("\n")


def conlleval(path, script):
    """conlleval.pl's overall FB1 (percent) of a `token gold guess` file."""
    with open(path, "rb") as f:
        out = subprocess.run(["perl", script, "-d", " "], stdin=f, capture_output=True, check=True).stdout.decode()
    m = re.search(r"FB1:\s*([0-9.]+)", out)
    if not m:
        raise SystemExit(f"conlleval.pl printed no FB1 for {path}:\n{out}")
    return float(m.group(1))


def mean_std(xs):
    return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


# ---- Flair ---------------------------------------------------------------------------------------

def parse_layers(s):
    if s in ("all", "top", "average"):
        return s
    values = [v for v in s.split(",") if v]
    try:
        return [int(v) for v in values]
    except ValueError:
        return [float(v) for v in values]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="our run directory (or a Hugging Face BERT directory)")
    p.add_argument("--train", required=True, help="English training file (CoNLL-2003 eng.train)")
    p.add_argument("--dev", required=True, help="English dev file (eng.testa): picks the best epoch")
    p.add_argument("--test", action="append", default=[], metavar="LANG=FILE", help="a test set, repeatable")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--seed", type=int, default=0, help="first seed (flair.set_seed): runs use seed..seed+runs-1")
    p.add_argument("--max-epochs", type=int, default=150)
    p.add_argument("--layers", default="all", help="all, top, average, indices '0,2' or weights '0.5,0.25,0.25'")
    p.add_argument("--work", required=True, help="directory for converted data, Flair's runs and predictions")
    p.add_argument("--device", default="cpu", help="torch device for Flair and our engine (cpu, cuda)")
    p.add_argument("--conlleval", default=os.path.join(ROOT, "..", "shared", "data", "ner", "conlleval.pl"))
    p.add_argument("--threads", type=int, default=0,
                   help="CPU threads for torch and our engine (0: their defaults); on a shared machine 1 is "
                        "several times faster than 2 threads that wait on each other")
    p.add_argument("--reuse", action="store_true",
                   help="tag with WORK/runK/best-model.pt where it exists instead of training run K again")
    p.add_argument("--verbose", action="store_true", help="Flair's log on the console too (always in WORK/runK/training.log)")
    a = p.parse_args()
    if a.runs < 1 or a.max_epochs < 1:
        p.error("--runs and --max-epochs must be positive")
    tests = []
    for t in a.test:
        lang, sep, path = t.partition("=")
        if not sep or not lang or not path:
            p.error(f"--test takes LANG=FILE, got {t!r}")
        tests.append((lang, path))
    if not os.path.isfile(a.conlleval):
        p.error(f"{a.conlleval}: no conlleval.pl (give --conlleval)")

    if a.threads > 0:
        os.environ["OMP_NUM_THREADS"] = str(a.threads)  # before torch and the engine start OpenMP
    import flair
    import torch
    from flair.data import Corpus
    from flair.datasets import ColumnDataset
    from flair.models import SequenceTagger
    from flair.trainers import ModelTrainer
    from sensealign.flair import SenseAlignEmbeddings

    flair.device = torch.device(a.device)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    if not a.verbose:
        # Console quiet; the trainer's own file handler (WORK/runK/training.log) keeps its INFO lines.
        for h in logging.getLogger("flair").handlers:
            h.setLevel(logging.WARNING)

    work = os.path.abspath(a.work)
    os.makedirs(os.path.join(work, "data"), exist_ok=True)
    os.makedirs(os.path.join(work, "pred"), exist_ok=True)

    # Converted copies (UTF-8, two columns, IOB2, no DOCSTART): what ColumnDataset reads without
    # guessing encodings or tag schemes; the tagger itself trains in BIOES (its default tag_format).
    files = [("en-train", a.train), ("en-dev", a.dev)] + tests
    data, datasets = {}, {}
    for name, path in files:
        sents = [(tok, to_iob2(tags)) for tok, tags in read_conll(path)]
        conv = os.path.join(work, "data", f"{name}.iob2")
        write_columns(sents, conv)
        ds = ColumnDataset(conv, {0: "text", 1: "ner"}, in_memory=True, encoding="utf-8")
        if len(ds) != len(sents):
            raise SystemExit(f"{path}: Flair read {len(ds)} sentences, we wrote {len(sents)}")
        for s, (tok, tags) in zip(ds, sents):  # Flair's spans must be the gold spans we score against
            got = sorted((lab.data_point.tokens[0].idx - 1, lab.data_point.tokens[-1].idx, lab.value)
                         for lab in s.get_labels("ner"))
            if len(s) != len(tok) or got != sorted(spans_of(tags)):
                raise SystemExit(f"{path}: Flair reads a sentence differently: {' '.join(tok)}")
        data[name], datasets[name] = sents, ds
        print(f"flair ner: {path}: {len(sents)} sentences, {sum(len(t) for t, _ in sents)} tokens, "
              f"{sum(len(spans_of(g)) for _, g in sents)} entities", file=sys.stderr)

    corpus = Corpus(train=datasets["en-train"], dev=datasets["en-dev"], test=None, name="conll03-en",
                    sample_missing_splits=False)
    tag_dictionary = corpus.make_label_dictionary("ner", add_unk=False)
    emb = SenseAlignEmbeddings(a.model, layers=parse_layers(a.layers), device=a.device)

    # Embed every file once: the vectors are static, and ModelTrainer with storage "cpu" and
    # predict(embedding_storage_mode="cpu") keep them on the tokens, so later runs skip the engine.
    t0 = time.time()
    for name, _ in files:
        sents = list(datasets[name])
        for i in range(0, len(sents), 512):
            emb.embed(sents[i:i + 512])
    embed_s = time.time() - t0
    n_tokens = sum(len(t) for name, _ in files for t, _ in data[name])
    print(f"flair ner: embedded {n_tokens} tokens ({emb.embedding_length} dims) in {embed_s:.0f} s", file=sys.stderr)

    def score(tagger, name, run):
        sents = list(datasets[name])
        for s in sents:
            s.remove_labels("predicted")
        tagger.predict(sents, mini_batch_size=64, label_name="predicted", embedding_storage_mode="cpu")
        path = os.path.join(work, "pred", f"{name}.run{run + 1}.txt")
        with open(path, "w", encoding="utf-8") as f:
            for s, (tok, gold) in zip(sents, data[name]):
                guess = ["O"] * len(tok)
                # The label of type "predicted", not Span.tag: a span Flair found with the gold
                # boundaries is the gold span's object, and its .tag is the first label, the gold one.
                for lab in s.get_labels("predicted"):
                    for k, t in enumerate(lab.data_point.tokens):
                        guess[t.idx - 1] = ("B-" if k == 0 else "I-") + lab.value
                f.writelines(f"{w} {g} {h}\n" for w, g, h in zip(tok, gold, guess))
                f.write("\n")
        return conlleval(path, a.conlleval)

    runs = []
    for run in range(a.runs):
        seed = a.seed + run
        base = os.path.join(work, f"run{run + 1}")
        best = os.path.join(base, "best-model.pt")
        t0 = time.time()
        reused = a.reuse and os.path.isfile(best)
        if reused:
            tagger = SequenceTagger.load(best)  # its embeddings keep our name: the vectors on the tokens serve
        else:
            shutil.rmtree(base, ignore_errors=True)  # training.log is appended to: start it afresh
            flair.set_seed(seed)
            tagger = SequenceTagger(hidden_size=256, embeddings=emb, tag_dictionary=tag_dictionary, tag_type="ner",
                                    use_crf=True, use_rnn=True, rnn_layers=1, reproject_embeddings=True)
            # Flair's defaults otherwise: anneal by 0.5 after 3 epochs without a better dev F1, stop
            # below 1e-4, clip gradients at norm 5, shuffle; best-model.pt (dev) reloaded at the end.
            ModelTrainer(tagger, corpus).train(base, learning_rate=0.1, mini_batch_size=32, max_epochs=a.max_epochs,
                                               embeddings_storage_mode="cpu", save_final_model=False)
        train_s = time.time() - t0
        tagger.eval()
        # Flair's own dev F1 (micro average over spans) after each epoch, from its log: it picked
        # the epoch, and its best must equal conlleval.pl's dev F1 of the model it kept.
        history = [round(100 * float(x), 2) for x in
                   re.findall(r"DEV : loss \S+ - f1-score \(micro avg\)\s+([0-9.]+)", open(os.path.join(base, "training.log")).read())]
        r = {"seed": seed, "train_seconds": round(train_s, 1), "reused": reused,
             "flair_dev_history": history, "dev_en": score(tagger, "en-dev", run), "test": {}}
        if history and abs(max(history) - r["dev_en"]) > 0.02:  # Flair logs 4 digits, conlleval 2
            print(f"flair ner run {run + 1}: warning: Flair's best dev F1 {max(history)} but conlleval.pl's "
                  f"{r['dev_en']} on the same dev set", file=sys.stderr)
        for lang, _ in tests:
            r["test"][lang] = score(tagger, lang, run)
        r["seconds"] = round(time.time() - t0, 1)
        runs.append(r)
        print(f"flair ner run {run + 1}/{a.runs} (seed {seed}): en dev {r['dev_en']:.2f}, "
              + ", ".join(f"{lang} {f:.2f}" for lang, f in r["test"].items())
              + f"; {'loaded' if reused else 'trained'} in {train_s:.0f} s "
              f"({a.max_epochs} epochs at most), Flair's dev F1 by epoch "
              f"{r['flair_dev_history']}", file=sys.stderr)

    report = {"task": "flair ner", "metric": "span F1 (conlleval.pl)", "model": os.path.abspath(a.model),
              "layers": a.layers, "embedding_length": emb.embedding_length, "embed_seconds": round(embed_s, 1),
              "settings": {"hidden_size": 256, "use_crf": True, "rnn_layers": 1, "reproject_embeddings": True,
                           "learning_rate": 0.1, "mini_batch_size": 32, "max_epochs": a.max_epochs,
                           "embeddings_storage_mode": "cpu", "flair": flair.__version__, "torch": torch.__version__},
              "runs": runs}
    rows = [("en (dev)", [r["dev_en"] for r in runs])] + [(lang, [r["test"][lang] for r in runs]) for lang, _ in tests]
    for lang, xs in rows:
        m, sd = mean_std(xs)
        report.setdefault("summary", {})[lang] = {"mean": m, "std": sd}
        print(f"flair ner {lang}: {m:.2f} ± {sd:.2f} F1 over {len(xs)} runs (runs: {', '.join(f'{x:.2f}' for x in xs)})")
    with open(os.path.join(work, "flair_ner.json"), "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
