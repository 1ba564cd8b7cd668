#include "data/nli_corpus.h"
#include "data/input_limits.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data/vocab.h"
#include "engine/core/error.h"

namespace sa {

namespace {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> f;
  size_t at = 0;
  for (size_t tab; (tab = line.find('\t', at)) != std::string::npos; at = tab + 1) f.push_back(line.substr(at, tab - at));
  f.push_back(line.substr(at));
  return f;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Adds the pair, or counts it as unlabeled ("-"); fails naming `where` for another label.
void add(NliSet& set, std::string premise, std::string hypothesis, const std::string& label, const std::string& where) {
  const std::string l = lower(label);
  if (l == "-" || l.empty()) {
    ++set.unlabeled;
    return;
  }
  NliLabel v;
  if (l == "entailment") v = NliLabel::Entailment;
  else if (l == "neutral") v = NliLabel::Neutral;
  else if (l == "contradiction" || l == "contradictory") v = NliLabel::Contradiction;
  else fail("{}: unknown label '{}' (expected entailment, neutral or contradiction)", where, label);
  set.pairs.push_back({std::move(premise), std::move(hypothesis), v});
}

int column(const std::vector<std::string>& header, std::initializer_list<const char*> names) {
  for (const char* n : names)
    for (size_t i = 0; i < header.size(); ++i)
      if (lower(header[i]) == n) return static_cast<int>(i);
  return -1;
}

}  // namespace

NliSet read_nli_tsv(const std::string& path) {
  std::ifstream in(path);
  SA_CHECK(in, "{}: cannot open", path);
  NliSet set;
  int p = 0, h = 1, l = 2;
  std::string line;
  for (int n = 1; read_line(in, line, path, n); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    require_utf8(line, path, n);
    std::vector<std::string> f = split_tabs(line);
    if (n == 1) {
      const int cp = column(f, {"sentence1", "premise", "sentence_a"}), ch = column(f, {"sentence2", "hypothesis", "sentence_b"}),
                cl = column(f, {"gold_label", "label", "entailment_judgment"});
      if (cp >= 0 && ch >= 0 && cl >= 0) {
        p = cp, h = ch, l = cl;
        continue;
      }
    }
    const int need = std::max({p, h, l}) + 1;
    SA_CHECK(static_cast<int>(f.size()) >= need, "{}:{}: {} tab-separated fields, expected at least {}", path, n, f.size(),
             need);
    add(set, f[p], f[h], f[l], path + ":" + std::to_string(n));
  }
  return set;
}

NliSet read_nli_jsonl(const std::string& path) {
  std::ifstream in(path);
  SA_CHECK(in, "{}: cannot open", path);
  NliSet set;
  std::string line;
  for (int n = 1; read_line(in, line, path, n); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(n);
    require_utf8(line, path, n);
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      add(set, j.at("sentence1").get<std::string>(), j.at("sentence2").get<std::string>(),
          j.at("gold_label").get<std::string>(), where);
    } catch (const nlohmann::json::exception& e) {
      fail("{}: expected a JSON object with sentence1, sentence2 and gold_label ({})", where, e.what());
    }
  }
  return set;
}

}  // namespace sa
