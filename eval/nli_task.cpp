#include "eval/nli_task.h"

#include <filesystem>

#include "data/tokenizer.h"
#include "eval/sentiment_task.h"
#include "layers/nli_classifier.h"

namespace sa {

NliSet read_nli_file(const std::string& path) {
  return std::filesystem::path(path).extension() == ".jsonl" ? read_nli_jsonl(path) : read_nli_tsv(path);
}

NliData prepare_nli(const NliSet& set, const CjkLexicon* lexicon) {
  NliData d;
  d.unlabeled = set.unlabeled;
  for (const NliPair& p : set.pairs) {
    std::vector<std::string> a = tokenize(p.premise, lexicon), b = tokenize(p.hypothesis, lexicon);
    if (a.empty() || b.empty()) {
      ++d.empty;
      continue;
    }
    d.premises.push_back(std::move(a));
    d.hypotheses.push_back(std::move(b));
    d.labels.push_back(static_cast<int32_t>(p.label));
  }
  return d;
}

namespace {

int run_xnli(const XlingArgs& a) {
  XlingInputs in(a);
  const std::unique_ptr<CjkLexicon> lexicon = cjk_lexicon(a);
  // A file's pairs and the token features of their premises and hypotheses.
  struct Pairs {
    NliData data;
    Tensor p, h;
    std::vector<int64_t> p_off, h_off;
  };
  auto load = [&](const std::string& file, const std::string& lang) {
    const ContextualEncoder& enc = in.encs.of(lang);
    Pairs s;
    const NliSet set = read_nli_file(file);
    if (!lexicon)
      for (const NliPair& p : set.pairs)
        if (has_cjk(p.premise) || has_cjk(p.hypothesis)) {
          warn_cjk(file);
          break;
        }
    s.data = prepare_nli(set, lexicon.get());
    SA_CHECK(!s.data.labels.empty(), "{}: no labeled pair", file);
    std::fprintf(stderr, "%s: %zu pairs (%d without a gold label and %d with an empty side left out)\n", file.c_str(),
                 s.data.labels.size(), s.data.unlabeled, s.data.empty);
    auto feats = [&](const Sentences& side, const char* what) {
      return cached_tensor(a.cache,
                           in.feature_key(in.encs.fingerprint.at(lang), file, enc.lowercase, std::string("xling nli ") + what),
                           file + " (" + what + ")", Device::cpu(),
                           [&] { return token_features(enc, side, in.spec, std::string("embed ") + what + " " + file); },
                           sentence_offsets(side).back());
    };
    s.p = feats(s.data.premises, "premises");
    s.h = feats(s.data.hypotheses, "hypotheses");
    s.p_off = sentence_offsets(s.data.premises);
    s.h_off = sentence_offsets(s.data.hypotheses);
    return s;
  };
  const Pairs train = load(a.train, ""), dev_p = load(a.dev, "");
  std::vector<Pairs> test_p;
  for (const auto& [lang, file] : in.tests) test_p.push_back(load(file, lang));
  auto logits = [&](const NliClassifier& c, const Pairs& s, const std::vector<size_t>& rows, bool training,
                    Generator& gen) {
    const SentenceBatch p = padded_batch(s.p, s.p_off, rows, nullptr, in.dev), h = padded_batch(s.h, s.h_off, rows, nullptr, in.dev);
    return c.logits(p.x, p.lengths, h.x, h.lengths, training, gen);
  };
  auto accuracy_on = [&](const NliClassifier& c, const Pairs& s) {
    Generator unused(0);
    size_t right = 0;
    for (size_t b0 = 0; b0 < s.data.labels.size(); b0 += 128) {
      std::vector<size_t> rows;
      std::vector<int32_t> gold;
      for (size_t r = b0; r < std::min(s.data.labels.size(), b0 + 128); ++r) rows.push_back(r), gold.push_back(s.data.labels[r]);
      right += static_cast<size_t>(std::lround(accuracy(logits(c, s, rows, false, unused), gold) * static_cast<double>(rows.size())));
    }
    return static_cast<double>(right) / static_cast<double>(s.data.labels.size());
  };

  TaskReport rep{"xnli", "accuracy", 4,
                 {{"hidden", a.hidden}, {"dense", a.dense}, {"dropout", a.dropout}, {"lr", a.lr},
                  {"batch_size", a.batch_size}, {"max_epochs", a.max_epochs}, {"patience", a.patience},
                  {"train_pairs", train.data.labels.size()}, {"dev_pairs", dev_p.data.labels.size()}},
                 {},
                 {}};
  for (const Pairs& p : test_p) {
    rep.test_info.push_back({{"pairs", p.data.labels.size()}});
    rep.test_notes.push_back(" (" + std::to_string(p.data.labels.size()) + " pairs)");
  }
  return run_and_report(a, in.encs, in.spec, in.tests, rep, [&](int run, uint64_t seed) {
    NliClassifier clf = NliClassifier::init(train.p.dim(1), a.hidden, a.dense, a.dropout, seed, in.dev);
    const FitOptions fo = fit_options(a, "xnli", run, seed);
    RunScores r;
    r.fit = fit_classifier(
        clf.params(), static_cast<int64_t>(train.data.labels.size()),
        [&](const std::vector<int64_t>& rows, Generator& gen) {
          std::vector<int32_t> y;
          for (int64_t i : rows) y.push_back(train.data.labels[static_cast<size_t>(i)]);
          const Tensor l = logits(clf, train, std::vector<size_t>(rows.begin(), rows.end()), true, gen);
          return ops::mean(ops::cross_entropy(l, Tensor::from(y, {static_cast<int64_t>(y.size())}, in.dev)));
        },
        [&] { return accuracy_on(clf, dev_p); }, fo);
    NoGrad ng;
    for (const Pairs& p : test_p) r.test.push_back(accuracy_on(clf, p));
    return r;
  });
}

void add_xnli_options(CLI::App* c, XlingArgs& a) {
  c->add_option("--dev", a.dev, "English dev pairs (XNLI dev-en.tsv)");
  c->add_option("--hidden", a.hidden, "BiLSTM units per direction (premise and hypothesis each)");
  c->add_option("--dense", a.dense, "units of the ReLU layer");
  c->add_option("--dropout", a.dropout, "dropout after the ReLU layer");
  c->add_option("--lr", a.lr, "Adam learning rate");
  c->add_option("--patience", a.patience, "epochs without a better dev accuracy before stopping");
}

}  // namespace

XlingTask nli_xling_task() {
  XlingArgs defaults;  // the NYU MultiNLI baseline's settings
  defaults.runs = 2, defaults.lr = 4e-4, defaults.hidden = 300, defaults.max_epochs = 20, defaults.patience = 3;
  return {.name = "xnli",
          .description = "sentence pairs (SICK, XNLI and MultiNLI .tsv, MultiNLI .jsonl): premise and hypothesis each through "
                         "its own BiLSTM (not shared), mean-pooled over its true length -> [u; v; u - v; u * v] -> dense (ReLU) "
                         "-> dropout -> 3 labels; Adam, best English-dev epoch; raw text tokenized as the corpora were",
          .items = "pairs",
          .data = "Data: English training pairs from MultiNLI (multinli_1.0_train.jsonl or .txt, from NYU) or SICK "
                  "(SICK.txt), English dev and other-language test pairs from XNLI (xnli.dev.tsv / xnli.test.tsv split "
                  "per language, or XTREME's dev-LANG.tsv: premise, hypothesis, label). Example: xling_eval xnli --model "
                  "RUN --train SICK.txt --dev dev-en.tsv --test de=dev-de.tsv --test es=dev-es.tsv",
          .defaults = defaults,
          .add_options = add_xnli_options,
          .run = run_xnli};
}

}  // namespace sa
