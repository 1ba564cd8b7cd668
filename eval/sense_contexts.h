// What a sense means, shown by the text that chose it: the corpus sentences holding a word are
// embedded, each occurrence's sense is selected as training selects it (nearest center by cosine
// in the projected space), and for each live sense the occurrences that chose it most clearly are
// kept: those whose best sense leads the runner-up by the widest cosine margin.
#pragma once
#include <string>
#include <vector>

#include "sense/sense_model.h"

namespace sa {

struct SenseContext {
  double margin = 0;                // best cosine minus the runner-up's (the best's own with one sense)
  std::vector<std::string> tokens;  // the sentence
  int position = 0;                 // of the word in it
};

struct SenseExamples {
  int sense = 0;          // s of row w*C + s
  int64_t selected = 0;   // occurrences in the text that chose it
  std::vector<SenseContext> clearest;  // at most per_sense, widest margin first
};

struct SenseContextOptions {
  std::string corpus;       // a file or glob; default: the run's train_prefix
  int direction = 0;        // 0 forward, 1 backward
  int per_sense = 5;
  int max_sentences = 2000; // sentences holding the word, read in corpus order
};

struct WordContexts {
  int64_t occurrences = 0, sentences = 0;
  std::vector<SenseExamples> senses;  // the word's enabled senses, in order
};

WordContexts sense_contexts(const SenseModel& r, const std::string& word, const SenseContextOptions& o);

// The sentence as one line with the word marked [like this], cut to `window` tokens either side.
std::string marked_context(const SenseContext& c, int window = 12);

}  // namespace sa
