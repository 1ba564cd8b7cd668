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
#include "eval/xling_harness.h"
#include "layers/encoder.h"
#include "layers/ner_tagger.h"

namespace sa {

// PAN-X for .tsv files, CoNLL-2002/2003 column files otherwise.
NerCorpus read_ner_file(const std::string& path);

// The tokens of each sentence (for token_features and sentence_offsets).
Sentences sentence_tokens(const std::vector<NerSentence>& sentences);

// The BIOES tags of the training data, in sorted order.
struct TagSet {
  std::vector<std::string> tags;
  std::map<std::string, int> ids;
  static TagSet of(const std::vector<NerSentence>& train);
  // A sentence's IOB tags as BIOES ids; fails naming the tag when training never saw it.
  std::vector<int32_t> bioes_ids(const std::vector<std::string>& iob_tags) const;
};

// Tags every sentence (Viterbi, in batches) and converts the BIOES path to IOB2; the gold tags
// (IOB1 or IOB2 as read) come back in IOB2 as well, for prediction files in one scheme. With `misc_to_o`, predicted MISC chunks become O (test sets without MISC).
std::vector<TaggedSentence> tag_sentences(const NerTagger& tagger, const TagSet& tagset, const Tensor& features,
                                          const std::vector<NerSentence>& sentences, bool misc_to_o, Device dev);
// Whether any gold tag of the corpus has type MISC.
bool has_misc(const std::vector<NerSentence>& sentences);

// bin/xling_eval ner: its subcommand, defaults, options and run (eval/xling_harness.h).
XlingTask ner_xling_task();

}  // namespace sa
