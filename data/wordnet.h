// WordNet 3.0 sense keys from index.sense (Debian wordnet-sense-index): which keys exist, their
// sense numbers, and each lemma's first sense (the most frequent by WordNet's order).
#pragma once
#include <string>
#include <unordered_map>

namespace sa {

// The universal POS of a sense key (lemma%ss_type:...): 1 NOUN, 2 VERB, 3/5 ADJ, 4 ADV; "" if none.
std::string sense_key_pos(const std::string& key);
// The lemma of a sense key (before '%').
std::string sense_key_lemma(const std::string& key);

class WordNetSenses {
 public:
  static constexpr const char* kDefaultPath = "/usr/share/wordnet/index.sense";
  // Fails naming the file and line for a malformed line, and saying which package installs it.
  static WordNetSenses load(const std::string& path = kDefaultPath);

  bool contains(const std::string& key) const { return number_.count(key) > 0; }
  int sense_number(const std::string& key) const;  // 0 when unknown
  // "lemma#POS" of the instance (lemma lowercased, spaces as '_') -> its sense 1, or "".
  std::string first_sense(const std::string& lemma, const std::string& pos) const;
  size_t size() const { return number_.size(); }

 private:
  std::unordered_map<std::string, int> number_;
  std::unordered_map<std::string, std::string> first_;  // lemma#POS -> key
};

// lemma#POS, the index the lemma-filtered protocol and the baselines share.
std::string lemma_pos_index(const std::string& lemma, const std::string& pos);

}  // namespace sa
