#include "eval/ner_task.h"

#include <algorithm>
#include <filesystem>
#include <set>


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

}  // namespace sa
