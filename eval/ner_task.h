// xling_eval ner's data, features and scoring: each sentence's token vectors (per --layers) as
// rows of one matrix, tags trained and decoded in BIOES, predictions written as IOB2 and scored as
// conlleval.pl scores them.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "data/ner_corpus.h"
#include "eval/conlleval.h"
#include "eval/xling_features.h"
#include "layers/encoder.h"
#include "layers/ner_tagger.h"

namespace sa {

// PAN-X for .tsv files, CoNLL-2002/2003 column files otherwise.
NerCorpus read_ner_file(const std::string& path);

// Rows offsets[i]..offsets[i+1] of the features belong to sentence i.
std::vector<int64_t> sentence_offsets(const std::vector<NerSentence>& sentences);
// [tokens of all sentences, dim'] f32 on the CPU; tokens lowercased when the encoder was trained so.
Tensor ner_token_features(const ContextualEncoder& encoder, const std::vector<NerSentence>& sentences,
                          const LayerSpec& spec, const std::string& label);

// The BIOES tags of the training data, in sorted order.
struct TagSet {
  std::vector<std::string> tags;
  std::map<std::string, int> ids;
  static TagSet of(const std::vector<NerSentence>& train);
  // A sentence's IOB tags as BIOES ids; fails naming the tag when training never saw it.
  std::vector<int32_t> bioes_ids(const std::vector<std::string>& iob_tags) const;
};

// A padded batch of sentences `rows`: x [B, T, dim'] and tags i32 [B, T] (0 past the lengths;
// undefined without `tag_ids`) on `dev`.
struct NerBatch {
  Tensor x, tags;
  std::vector<int> lengths;
};
NerBatch ner_batch(const Tensor& features, const std::vector<int64_t>& offsets, const std::vector<size_t>& rows,
                   const std::vector<std::vector<int32_t>>* tag_ids, Device dev);

// Tags every sentence (Viterbi, in batches), converts the BIOES path to IOB2 and scores it against
// the gold tags. With `misc_to_o`, predicted MISC chunks become O (test sets without MISC).
std::vector<TaggedSentence> tag_sentences(const NerTagger& tagger, const TagSet& tagset, const Tensor& features,
                                          const std::vector<NerSentence>& sentences, bool misc_to_o, Device dev);
// Whether any gold tag of the corpus has type MISC.
bool has_misc(const std::vector<NerSentence>& sentences);

}  // namespace sa
