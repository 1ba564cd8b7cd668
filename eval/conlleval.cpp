#include "eval/conlleval.h"

#include <fmt/format.h>

namespace sa {

namespace {

// A tag split as conlleval splits it: "B-PER" -> ("B", "PER"); "O" -> ("O", "").
struct Tag {
  std::string kind, type;
};

Tag split(const std::string& t) {
  const size_t dash = t.find('-');
  if (dash == std::string::npos) return {t, ""};
  return {t.substr(0, dash), t.substr(dash + 1)};
}

// Whether a chunk ends between `prev` and `cur` (conlleval's endOfChunk).
bool chunk_ends(const Tag& prev, const Tag& cur) {
  const std::string& p = prev.kind;
  const std::string& c = cur.kind;
  if ((p == "B" || p == "I") && (c == "B" || c == "O")) return true;
  if (p == "E" && (c == "E" || c == "I" || c == "O")) return true;
  if (p != "O" && p != "." && prev.type != cur.type) return true;
  return p == "]" || p == "[";
}

// Whether a chunk starts at `cur` (conlleval's startOfChunk).
bool chunk_starts(const Tag& prev, const Tag& cur) {
  const std::string& p = prev.kind;
  const std::string& c = cur.kind;
  if ((p == "B" || p == "I" || p == "O") && c == "B") return true;
  if (p == "O" && (c == "I" || c == "E")) return true;
  if (p == "E" && (c == "E" || c == "I")) return true;
  if (c != "O" && c != "." && prev.type != cur.type) return true;
  return c == "[" || c == "]";
}

double percent(int64_t a, int64_t b) { return b > 0 ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0.0; }

}  // namespace

double ChunkCounts::precision() const { return percent(correct, guessed); }
double ChunkCounts::recall() const { return percent(correct, gold); }
double ChunkCounts::f1() const {
  const double p = precision(), r = recall();
  return p + r > 0 ? 2 * p * r / (p + r) : 0.0;
}

ConllevalReport conlleval(const std::vector<TaggedSentence>& sentences) {
  ConllevalReport r;
  Tag last_gold{"O", ""}, last_guess{"O", ""};
  bool in_correct = false;  // the chunk being read is right so far in both
  // One step of conlleval's loop; a sentence boundary is the tag pair (O, O) and no token.
  auto step = [&](const Tag& gold, const Tag& guess, bool token) {
    const bool gold_ends = chunk_ends(last_gold, gold), guess_ends = chunk_ends(last_guess, guess);
    if (in_correct) {
      if (gold_ends && guess_ends && last_guess.type == last_gold.type) {
        in_correct = false;
        ++r.all.correct;
        ++r.by_type[last_gold.type].correct;
      } else if (gold_ends != guess_ends || guess.type != gold.type) {
        in_correct = false;
      }
    }
    const bool gold_starts = chunk_starts(last_gold, gold), guess_starts = chunk_starts(last_guess, guess);
    if (gold_starts && guess_starts && guess.type == gold.type) in_correct = true;
    if (gold_starts) ++r.all.gold, ++r.by_type[gold.type].gold;
    if (guess_starts) ++r.all.guessed, ++r.by_type[guess.type].guessed;
    if (token) {
      if (gold.kind == guess.kind && gold.type == guess.type) ++r.correct_tags;
      ++r.tokens;
    }
    last_gold = gold, last_guess = guess;
  };
  for (const TaggedSentence& s : sentences) {
    for (const TaggedToken& t : s) step(split(t.gold), split(t.guess), true);
    step({"O", ""}, {"O", ""}, false);
  }
  if (in_correct) ++r.all.correct, ++r.by_type[last_gold.type].correct;
  return r;
}

std::string format_conlleval(const ConllevalReport& r) {
  std::string s = fmt::format("processed {} tokens with {} phrases; found: {} phrases; correct: {}.\n", r.tokens,
                              r.all.gold, r.all.guessed, r.all.correct);
  if (r.tokens > 0)
    s += fmt::format("accuracy: {:6.2f}%; precision: {:6.2f}%; recall: {:6.2f}%; FB1: {:6.2f}\n", r.accuracy(),
                     r.all.precision(), r.all.recall(), r.all.f1());
  for (const auto& [type, c] : r.by_type)  // std::map orders types as Perl's sort does (bytewise)
    s += fmt::format("{:>17}: precision: {:6.2f}%; recall: {:6.2f}%; FB1: {:6.2f}  {}\n", type, c.precision(), c.recall(),
                     c.f1(), c.guessed);
  return s;
}

std::string conlleval_input(const std::vector<TaggedSentence>& sentences) {
  std::string s;
  for (const TaggedSentence& sent : sentences) {
    for (const TaggedToken& t : sent) s += t.token + " " + t.gold + " " + t.guess + "\n";
    s += "\n";
  }
  return s;
}

}  // namespace sa
