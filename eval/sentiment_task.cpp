#include "eval/sentiment_task.h"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>

#include "data/corpus.h"
#include "data/tokenizer.h"
#include "layers/dense_classifier.h"

namespace sa {

SentimentData prepare_sentiment(const ReviewSet& set, int max_tokens, bool lowercase, const CjkLexicon* lexicon) {
  SA_CHECK(max_tokens > 0, "sentiment: max_tokens must be positive, got {}", max_tokens);
  SentimentData d;
  for (const Review& r : set.reviews) {
    const int label = sentiment_label(r.stars);
    if (label < 0) {
      ++d.neutral;
      continue;
    }
    Sentences kept;
    int n = 0;
    bool cut = false;
    for (std::vector<std::string>& s : tokenize_sentences(r.text, lexicon)) {
      if (n >= max_tokens) {
        cut = true;
        break;
      }
      if (static_cast<int>(s.size()) > max_tokens - n) {
        s.resize(static_cast<size_t>(max_tokens - n));
        cut = true;
      }
      n += static_cast<int>(s.size());
      if (lowercase)
        for (std::string& w : s) lowercase_ascii(w);
      kept.push_back(std::move(s));
    }
    if (n == 0) {
      ++d.empty;
      continue;
    }
    d.truncated += cut;
    d.reviews.push_back(std::move(kept));
    d.labels.push_back(label);
  }
  return d;
}

SentimentData subset(const SentimentData& d, const std::vector<size_t>& rows) {
  SentimentData s;
  for (size_t r : rows) {
    s.reviews.push_back(d.reviews.at(r));
    s.labels.push_back(d.labels.at(r));
  }
  return s;
}

Tensor review_means(const ContextualEncoder& encoder, const SentimentData& data, const LayerSpec& spec,
                    const std::string& label) {
  Sentences flat;
  std::vector<size_t> owner;
  for (size_t r = 0; r < data.reviews.size(); ++r)
    for (const auto& s : data.reviews[r]) {
      flat.push_back(s);
      owner.push_back(r);
    }
  const int64_t D = feature_dim(spec, encoder.n_layers(), encoder.dim());
  std::vector<double> sums(data.reviews.size() * static_cast<size_t>(D), 0.0), counts(data.reviews.size(), 0.0);
  embed_all(encoder, flat, 32, label, [&](size_t i, const Tensor& e) {
    NoGrad ng;
    const Tensor f = select_layers(e, spec);
    const std::vector<double> v = ops::sum(f, 0).values();
    double* row = sums.data() + owner[i] * static_cast<size_t>(D);
    for (int64_t k = 0; k < D; ++k) row[k] += v[static_cast<size_t>(k)];
    counts[owner[i]] += static_cast<double>(f.dim(0));
  });
  for (size_t r = 0; r < counts.size(); ++r)
    for (int64_t k = 0; k < D; ++k) sums[r * static_cast<size_t>(D) + static_cast<size_t>(k)] /= counts[r];
  return Tensor::of(sums, {static_cast<int64_t>(data.reviews.size()), D});
}

double accuracy(const Tensor& logits, const std::vector<int32_t>& labels) {
  const std::vector<double> v = logits.values();
  const int64_t C = logits.dim(1);
  SA_CHECK(static_cast<size_t>(logits.dim(0)) == labels.size() && !labels.empty(),
           "accuracy: {} rows of logits for {} labels", logits.dim(0), labels.size());
  size_t right = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    int64_t best = 0;
    for (int64_t c = 1; c < C; ++c)
      if (v[i * static_cast<size_t>(C) + static_cast<size_t>(c)] > v[i * static_cast<size_t>(C) + static_cast<size_t>(best)]) best = c;
    right += best == labels[i];
  }
  return static_cast<double>(right) / static_cast<double>(labels.size());
}

namespace {

ReviewSet read_reviews(const std::string& path) {
  return std::filesystem::path(path).extension() == ".review" ? read_webis_cls(path) : read_marc_csv(path);
}

int run_sent(const XlingArgs& a) {
  XlingInputs in(a);
  const std::unique_ptr<CjkLexicon> lexicon = cjk_lexicon(a);
  // Data: the English training file, its dev part, and each test file.
  // lang: "" for English (train, dev), else a test language, whose encoder reads it.
  auto load = [&](const std::string& file, const std::string& lang) {
    const ReviewSet reviews = read_reviews(file);
    if (!lexicon)
      for (const Review& r : reviews.reviews)
        if (has_cjk(r.text)) {
          warn_cjk(file);
          break;
        }
    SentimentData d = prepare_sentiment(reviews, a.max_tokens, in.encs.of(lang).lowercase, lexicon.get());
    SA_CHECK(!d.labels.empty(), "{}: no review with 1, 2, 4 or 5 stars", file);
    std::fprintf(stderr, "%s: %zu reviews (%d with 3 stars and %d without text left out, %d cut at %d tokens)\n",
                 file.c_str(), d.labels.size(), d.neutral, d.empty, d.truncated, a.max_tokens);
    return d;
  };
  auto features = [&](const std::string& file, const SentimentData& d, const std::string& lang) {
    const ContextualEncoder& enc = in.encs.of(lang);
    return cached_tensor(a.cache,
                         in.feature_key(in.encs.fingerprint.at(lang), file, enc.lowercase, "xling sent review means v1"),
                         file, in.dev, [&] { return review_means(enc, d, in.spec, "embed " + file); },
                         static_cast<int64_t>(d.labels.size()));
  };
  SentimentData train = load(a.train, "");
  Tensor train_x = features(a.train, train, "");
  SentimentData dev_data;
  Tensor dev_x;
  if (!a.dev.empty()) {
    dev_data = load(a.dev, "");
    dev_x = features(a.dev, dev_data, "");
  } else {  // a fixed part of the training file, the same for every run
    SA_CHECK(a.dev_fraction > 0 && a.dev_fraction < 1, "--dev-fraction must be in (0, 1), got {}", a.dev_fraction);
    std::vector<size_t> order(train.labels.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(a.seed * 104729 + 7));
    const size_t n_dev = std::max<size_t>(1, static_cast<size_t>(a.dev_fraction * static_cast<double>(order.size())));
    SA_CHECK(n_dev < order.size(), "{}: too few reviews to hold out a dev part", a.train);
    std::vector<size_t> dev_rows(order.begin(), order.begin() + static_cast<long>(n_dev)),
        train_rows(order.begin() + static_cast<long>(n_dev), order.end());
    std::sort(dev_rows.begin(), dev_rows.end());
    std::sort(train_rows.begin(), train_rows.end());
    auto rows_of = [&](const Tensor& x, const std::vector<size_t>& rows) {
      std::vector<int32_t> r(rows.begin(), rows.end());
      return ops::gather_rows(x, Tensor::from(r, {static_cast<int64_t>(r.size())}, in.dev));
    };
    dev_data = subset(train, dev_rows);
    dev_x = rows_of(train_x, dev_rows);
    train_x = rows_of(train_x, train_rows);
    train = subset(train, train_rows);
  }
  std::vector<std::pair<SentimentData, Tensor>> test_sets;
  for (const auto& [lang, file] : in.tests) {
    SentimentData d = load(file, lang);
    Tensor x = features(file, d, lang);
    test_sets.emplace_back(std::move(d), x);
  }

  TaskReport rep{"sent", "accuracy", 4,
                 {{"hidden", a.hidden}, {"dropout", a.dropout}, {"lr", a.lr}, {"batch_size", a.batch_size},
                  {"max_epochs", a.max_epochs}, {"patience", a.patience}, {"max_tokens", a.max_tokens},
                  {"train_reviews", train.labels.size()}, {"dev_reviews", dev_data.labels.size()}},
                 {},
                 {}};
  for (const auto& [d, x] : test_sets) {
    rep.test_info.push_back({{"reviews", d.labels.size()}});
    rep.test_notes.push_back(" (" + std::to_string(d.labels.size()) + " reviews)");
  }
  return run_and_report(a, in.encs, in.spec, in.tests, rep, [&](int run, uint64_t seed) {
    DenseClassifier clf = DenseClassifier::init(train_x.dim(1), a.hidden, 2, a.dropout, seed, in.dev);
    const FitOptions fo = fit_options(a, "sent", run, seed);
    Generator eval_gen(0);
    RunScores r;
    r.fit = fit_classifier(
        clf.params(), train_x.dim(0),
        [&](const std::vector<int64_t>& rows, Generator& gen) {
          std::vector<int32_t> idx(rows.begin(), rows.end()), y;
          for (int64_t i : rows) y.push_back(train.labels[static_cast<size_t>(i)]);
          const int64_t n = static_cast<int64_t>(idx.size());
          return ops::mean(ops::cross_entropy(clf.logits(ops::gather_rows(train_x, Tensor::from(idx, {n}, in.dev)), true, gen),
                                              Tensor::from(y, {n}, in.dev)));
        },
        [&] { return accuracy(clf.logits(dev_x, false, eval_gen), dev_data.labels); }, fo);
    NoGrad ng;
    for (const auto& [d, x] : test_sets) r.test.push_back(accuracy(clf.logits(x, false, eval_gen), d.labels));
    return r;
  });
}

void add_sent_options(CLI::App* c, XlingArgs& a) {
  c->add_option("--dev", a.dev, "English dev reviews (default: --dev-fraction of --train)");
  c->add_option("--dev-fraction", a.dev_fraction, "part of --train held out as dev when --dev is not given");
  c->add_option("--max-tokens", a.max_tokens, "tokens kept per review (its first sentences)")
      ->check(CLI::Validator(positive_integer, "POSITIVE"));
  c->add_option("--hidden", a.hidden, "units of the hidden dense layer");
  c->add_option("--dropout", a.dropout, "dropout after the hidden layer");
  c->add_option("--lr", a.lr, "Adam learning rate");
  c->add_option("--patience", a.patience, "epochs without a better dev accuracy before stopping");
}

}  // namespace

XlingTask sentiment_xling_task() {
  XlingArgs defaults;
  return {.name = "sent",
          .description = "review sentiment (MARC CSV, with or without a header row, or Webis-CLS-10 .review): 1-2 stars "
                         "negative, 4-5 positive, 3 left out; the review split into sentences and cut at --max-tokens; the mean of "
                         "its vectors -> dense (hidden, ReLU, dropout) -> dense to 2 classes; Adam, early stop on English dev "
                         "accuracy",
          .items = "reviews",
          .data = "Data: the Multilingual Amazon Reviews Corpus (MARC; CSV review_text,stars per language: English "
                  "training reviews, test reviews in each language) or Webis-CLS-10 (Prettenhofer and Stein; "
                  "LANG/CATEGORY/train.review and test.review). Example: xling_eval sent --model RUN --train "
                  "marc-train-en.csv --test en=marc-test-en.csv --test es=marc-test-es.csv",
          .defaults = defaults,
          .add_options = add_sent_options,
          .run = run_sent};
}

}  // namespace sa
