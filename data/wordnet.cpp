#include "data/wordnet.h"
#include "data/input_limits.h"

#include <fstream>
#include <sstream>

#include "data/corpus.h"
#include "engine/core/error.h"

namespace sa {

std::string sense_key_pos(const std::string& key) {
  const size_t p = key.find('%');
  if (p == std::string::npos || p + 1 >= key.size()) return "";
  switch (key[p + 1]) {
    case '1': return "NOUN";
    case '2': return "VERB";
    case '3':
    case '5': return "ADJ";
    case '4': return "ADV";
    default: return "";
  }
}

std::string sense_key_lemma(const std::string& key) { return key.substr(0, key.find('%')); }

std::string lemma_pos_index(const std::string& lemma, const std::string& pos) {
  std::string l = lemma;
  lowercase_ascii(l);
  for (char& ch : l)
    if (ch == ' ') ch = '_';
  return l + "#" + pos;
}

WordNetSenses WordNetSenses::load(const std::string& path) {
  std::ifstream f(path);
  SA_CHECK(f, "{}: cannot open WordNet's index.sense (Debian package wordnet-sense-index; `make deps` installs it)",
           path);
  WordNetSenses w;
  std::string line;
  for (int lineno = 1; read_line(f, line, path, lineno); ++lineno) {
    std::istringstream ss(line);
    std::string key, offset;
    int number = 0;
    SA_CHECK(ss >> key >> offset >> number && number > 0 && !sense_key_pos(key).empty(),
             "{}:{}: expected \"sense_key synset_offset sense_number tag_cnt\", got \"{}\"", path, lineno, line);
    w.number_[key] = number;
    if (number == 1) w.first_[lemma_pos_index(sense_key_lemma(key), sense_key_pos(key))] = key;
  }
  SA_CHECK(!w.number_.empty(), "{}: no sense keys", path);
  return w;
}

int WordNetSenses::sense_number(const std::string& key) const {
  auto it = number_.find(key);
  return it == number_.end() ? 0 : it->second;
}

std::string WordNetSenses::first_sense(const std::string& lemma, const std::string& pos) const {
  auto it = first_.find(lemma_pos_index(lemma, pos));
  return it == first_.end() ? "" : it->second;
}

}  // namespace sa
