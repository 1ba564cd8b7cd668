#include "eval/ner_task.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "data/atomic_file.h"

namespace sa {

NerCorpus read_ner_file(const std::string& path) {
  return std::filesystem::path(path).extension() == ".tsv" ? read_panx(path) : read_conll_ner(path);
}

Sentences sentence_tokens(const std::vector<NerSentence>& sentences) {
  Sentences out;
  for (const NerSentence& s : sentences) out.push_back(s.tokens);
  return out;
}

TagSet TagSet::of(const std::vector<NerSentence>& train) {
  std::set<std::string> seen;
  for (const NerSentence& s : train)
    for (const std::string& t : iob_to_bioes(s.tags)) seen.insert(t);
  TagSet ts;
  ts.tags.assign(seen.begin(), seen.end());
  for (size_t i = 0; i < ts.tags.size(); ++i) ts.ids[ts.tags[i]] = static_cast<int>(i);
  return ts;
}

std::vector<int32_t> TagSet::bioes_ids(const std::vector<std::string>& iob_tags) const {
  std::vector<int32_t> ids;
  for (const std::string& t : iob_to_bioes(iob_tags)) {
    auto it = this->ids.find(t);
    SA_CHECK(it != this->ids.end(), "NER: tag {} does not occur in the training data", t);
    ids.push_back(it->second);
  }
  return ids;
}

bool has_misc(const std::vector<NerSentence>& sentences) {
  for (const NerSentence& s : sentences)
    for (const std::string& t : s.tags)
      if (t.size() > 2 && t.compare(2, std::string::npos, "MISC") == 0) return true;
  return false;
}

std::vector<TaggedSentence> tag_sentences(const NerTagger& tagger, const TagSet& tagset, const Tensor& features,
                                          const std::vector<NerSentence>& sentences, bool misc_to_o, Device dev) {
  const std::vector<int64_t> off = sentence_offsets(sentence_tokens(sentences));
  std::vector<TaggedSentence> out;
  for (size_t b0 = 0; b0 < sentences.size(); b0 += 64) {
    std::vector<size_t> rows;
    for (size_t r = b0; r < std::min(sentences.size(), b0 + 64); ++r) rows.push_back(r);
    SentenceBatch batch = packed_batch(features, off, rows, nullptr, dev);
    const std::vector<double> path = tagger.decode(batch.x, batch.lengths).values();
    const int64_t T = *std::max_element(batch.lengths.begin(), batch.lengths.end());
    for (size_t i = 0; i < rows.size(); ++i) {
      const NerSentence& s = sentences[rows[i]];
      std::vector<std::string> bioes;
      for (size_t t = 0; t < s.tokens.size(); ++t)
        bioes.push_back(tagset.tags[static_cast<size_t>(path[i * static_cast<size_t>(T) + t])]);
      std::vector<std::string> guess = bioes_to_iob2(bioes);
      if (misc_to_o)
        for (std::string& g : guess)
          if (g.size() > 2 && g.compare(2, std::string::npos, "MISC") == 0) g = "O";
      const std::vector<std::string> gold = bioes_to_iob2(iob_to_bioes(s.tags));  // IOB1 files are written as IOB2 too
      TaggedSentence ts;
      for (size_t t = 0; t < s.tokens.size(); ++t) ts.push_back({s.tokens[t], gold[t], guess[t]});
      out.push_back(std::move(ts));
    }
  }
  return out;
}

namespace {

int run_ner(const XlingArgs& a) {
  XlingInputs in(a);
  auto load = [&](const std::string& file) {
    NerCorpus c = read_ner_file(file);
    SA_CHECK(!c.sentences.empty(), "{}: no sentences", file);
    size_t tokens = 0;
    for (const NerSentence& s : c.sentences) tokens += s.tokens.size();
    std::fprintf(stderr, "%s: %zu sentences, %zu tokens%s\n", file.c_str(), c.sentences.size(), tokens,
                 c.latin1 ? " (read as ISO-8859-1)" : "");
    return c.sentences;
  };
  const std::unique_ptr<CjkLexicon> lexicon = cjk_lexicon(a);
  auto features = [&](const std::string& file, const std::vector<NerSentence>& s, const std::string& lang) {
    const ContextualEncoder& enc = in.encs.of(lang);
    const Sentences tokens = sentence_tokens(s);
    // One CJK character a token (PAN-X zh/ja): with a lexicon, a word-reading encoder gets the
    // characters regrouped into the words its corpora were segmented into. The warning needs a
    // real share of such tokens, not a stray character in a German file.
    const double share = enc.reads_segmented_words() ? cjk_character_share(tokens) : 0.0;
    const bool regroup = share > 0 && lexicon;
    if (share >= 0.1 && !lexicon)
      std::fprintf(stderr, "%s: warning: one CJK character a token and no --cedict or --edict: each character is "
                   "embedded alone, not as part of the bilingual corpora's words\n", file.c_str());
    return cached_tensor(
        a.cache,
        in.feature_key(in.encs.fingerprint.at(lang), file, enc.lowercase, regroup ? "xling ner cjk words v1" : "xling ner tokens v1"),
        file, Device::cpu(),
        [&] {
          return regroup ? regrouped_token_features(enc, tokens, *lexicon, in.spec, "embed " + file)
                         : token_features(enc, tokens, in.spec, "embed " + file);
        },
        sentence_offsets(tokens).back());
  };
  const std::vector<NerSentence> train = load(a.train), dev_s = load(a.dev);
  const Tensor train_x = features(a.train, train, ""), dev_x = features(a.dev, dev_s, "");
  const TagSet tagset = TagSet::of(train);
  std::vector<std::vector<int32_t>> train_tags;
  for (const NerSentence& s : train) train_tags.push_back(tagset.bioes_ids(s.tags));
  const std::vector<int64_t> train_off = sentence_offsets(sentence_tokens(train));
  std::vector<std::vector<NerSentence>> test_s;
  std::vector<Tensor> test_x;
  for (const auto& [lang, file] : in.tests) {
    test_s.push_back(load(file));
    test_x.push_back(features(file, test_s.back(), lang));
  }
  if (!a.predictions.empty()) std::filesystem::create_directories(a.predictions);

  NerTaggerOptions to;
  to.hidden = a.hidden, to.word_dropout = a.word_dropout, to.locked_dropout = a.dropout;
  TaskReport rep{"ner", "span F1 (conlleval)", 2,
                 {{"hidden", a.hidden}, {"word_dropout", a.word_dropout}, {"locked_dropout", a.dropout}, {"lr", a.lr},
                  {"min_lr", a.min_lr}, {"batch_size", a.batch_size}, {"max_epochs", a.max_epochs},
                  {"patience", a.patience}, {"tags", tagset.tags}},
                 {},
                 {}};
  std::vector<bool> misc_to_o;
  for (const auto& s : test_s) {
    misc_to_o.push_back(!has_misc(s));
    rep.test_info.push_back({{"misc_as_o", misc_to_o.back()}});
    rep.test_notes.push_back(misc_to_o.back() ? " (no MISC in its gold tags: predicted MISC counted as O)" : "");
  }
  return run_and_report(a, in.encs, in.spec, in.tests, rep, [&](int run, uint64_t seed) {
    NerTagger tagger = NerTagger::init(train_x.dim(1), static_cast<int64_t>(tagset.tags.size()), to, seed, in.dev);
    FitOptions fo = fit_options(a, "ner", run, seed);
    fo.schedule = FitOptions::Schedule::SgdAnneal;
    fo.min_lr = a.min_lr;
    RunScores r;
    r.fit = fit_classifier(
        tagger.params(), static_cast<int64_t>(train.size()),
        [&](const std::vector<int64_t>& rows, Generator& gen) {
          const SentenceBatch b = packed_batch(train_x, train_off, std::vector<size_t>(rows.begin(), rows.end()), &train_tags, in.dev);
          return tagger.loss(b.x, b.lengths, b.tags, gen);
        },
        [&] { return conlleval(tag_sentences(tagger, tagset, dev_x, dev_s, false, in.dev)).all.f1(); }, fo);
    for (size_t t = 0; t < in.tests.size(); ++t) {
      const std::vector<TaggedSentence> tagged = tag_sentences(tagger, tagset, test_x[t], test_s[t], misc_to_o[t], in.dev);
      r.test.push_back(conlleval(tagged).all.f1());
      if (!a.predictions.empty())
        write_file_atomically((std::filesystem::path(a.predictions) /
                               (in.tests[t].first + ".run" + std::to_string(run + 1) + ".txt")).string(),
                              conlleval_input(tagged));
    }
    return r;
  });
}

void add_ner_options(CLI::App* c, XlingArgs& a) {
  c->add_option("--dev", a.dev, "English dev sentences (CoNLL-2003 eng.testa)");
  c->add_option("--hidden", a.hidden, "BiLSTM units per direction");
  c->add_option("--word-dropout", a.word_dropout, "chance that a token's whole vector is zeroed");
  c->add_option("--dropout", a.dropout, "locked dropout (one mask per sentence) before and after the BiLSTM");
  c->add_option("--lr", a.lr, "SGD's starting learning rate");
  c->add_option("--min-lr", a.min_lr, "training stops when the halved rate falls below it");
  c->add_option("--patience", a.patience, "epochs without a better dev F1 before the rate is halved");
  c->add_option("--predictions", a.predictions, "directory for LANG.runK.txt files (token gold guess) that "
                                                  "conlleval.pl reads");
}

}  // namespace

XlingTask ner_xling_task() {
  XlingArgs defaults;  // Flair's SequenceTagger defaults
  defaults.lr = 0.1, defaults.max_epochs = 150, defaults.patience = 3;
  return {.name = "ner",
          .description = "named entities (CoNLL-2002/2003 column files in IOB1 or IOB2, UTF-8 or else read as ISO-8859-1, "
                         "-DOCSTART- lines as document breaks; PAN-X .tsv): word dropout and locked dropout -> linear "
                         "re-projection -> BiLSTM -> locked dropout -> linear -> CRF; trained and decoded in BIOES with SGD "
                         "(--batch-size sentences a step, rate halved after --patience epochs without a dev F1 gain, stop below --min-lr), best "
                         "English-dev epoch; span F1 as conlleval.pl; --predictions written in IOB2; predicted MISC counts as O on "
                         "test sets without MISC. Files given one CJK character a token "
                         "(PAN-X zh, ja) are regrouped into --cedict/--edict words for an ELMo encoder, each character scored with its "
                         "word's vector",
          .items = "sentences",
          .data = "Data: English training and dev sets from CoNLL-2003 (eng.train, eng.testa; the Reuters text comes "
                  "with a licence from NIST, the annotations from the CoNLL-2003 shared task), test sets from CoNLL-2003 "
                  "German (deu.testa/testb) and CoNLL-2002 Spanish and Dutch (esp.testa/testb, ned.testa/testb, the "
                  "CoNLL-2002 shared task's files, also in NLTK's data as conll2002), or WikiANN/PAN-X .tsv files (the "
                  "XTREME benchmark). Example: xling_eval ner --model RUN --train eng.train --dev eng.testa --test "
                  "de=deu.testa --test es=esp.testa",
          .defaults = defaults,
          .add_options = add_ner_options,
          .run = run_ner};
}

}  // namespace sa
