// Span F1 for chunk and NER tags, computed exactly as CoNLL's conlleval.pl does (its chunk
// start/end rules, per-type counts, token accuracy) and printed in its format, so our numbers
// equal the official scorer's digit for digit. Tags are "B-TYPE", "I-TYPE", "E-TYPE", "S-TYPE"
// or "O" (IOB1, IOB2 and BIOES alike, read as conlleval reads them).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sa {

struct TaggedToken {
  std::string token, gold, guess;
};
using TaggedSentence = std::vector<TaggedToken>;

struct ChunkCounts {
  int64_t correct = 0, gold = 0, guessed = 0;  // chunks right, in the gold tags, in the guesses
  double precision() const;                    // percent, as conlleval
  double recall() const;
  double f1() const;
};

struct ConllevalReport {
  int64_t tokens = 0, correct_tags = 0;
  ChunkCounts all;
  std::map<std::string, ChunkCounts> by_type;  // every type seen in the gold tags or guesses
  double accuracy() const { return tokens ? 100.0 * correct_tags / tokens : 0.0; }
};

ConllevalReport conlleval(const std::vector<TaggedSentence>& sentences);
// conlleval.pl's report, line for line.
std::string format_conlleval(const ConllevalReport& r);
// "token gold guess" lines, a blank line after each sentence: the file conlleval.pl reads.
std::string conlleval_input(const std::vector<TaggedSentence>& sentences);

}  // namespace sa
