#include "data/ner_corpus.h"

#include <cctype>
#include <fstream>
#include <sstream>

#include "data/corpus.h"
#include "data/vocab.h"
#include "engine/core/error.h"

namespace sa {

namespace {

std::string type_of(const std::string& tag) { return tag.size() > 2 ? tag.substr(2) : std::string(); }

void check_iob_tag(const std::string& tag, const std::string& path, int line) {
  const bool ok = tag == "O" || (tag.size() > 2 && (tag[0] == 'B' || tag[0] == 'I') && tag[1] == '-');
  SA_CHECK(ok, "{}:{}: unknown tag '{}' (expected O, B-TYPE or I-TYPE)", path, line, tag);
}

std::vector<std::string> split(const std::string& line, char sep) {
  if (sep == ' ') return split_tokens(line);
  std::vector<std::string> f;
  size_t at = 0;
  for (size_t tab; (tab = line.find(sep, at)) != std::string::npos; at = tab + 1) f.push_back(line.substr(at, tab - at));
  f.push_back(line.substr(at));
  return f;
}

// Reads sentences of "columns ... tag" lines; `sep` splits the columns.
NerCorpus read_columns(const std::string& path, char sep, bool panx) {
  std::ifstream in(path, std::ios::binary);
  SA_CHECK(in, "{}: cannot open", path);
  std::stringstream all;
  all << in.rdbuf();
  std::string text = all.str();
  NerCorpus c;
  if (!valid_utf8(text)) {
    text = latin1_to_utf8(text);
    c.latin1 = true;
  }
  std::istringstream lines(text);
  NerSentence cur;
  size_t columns = 0;
  int first_line = 0;
  bool strip_prefix = false;
  auto flush = [&] {
    if (!cur.tokens.empty()) c.sentences.push_back(std::move(cur));
    cur = {};
  };
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) {
      flush();
      continue;
    }
    if (line.rfind("-DOCSTART-", 0) == 0) {
      flush();
      ++c.documents;
      continue;
    }
    std::vector<std::string> f = split(line, sep);
    if (columns == 0) columns = f.size(), first_line = n;
    SA_CHECK(f.size() >= 2, "{}:{}: expected a token and a tag, got '{}'", path, n, line);
    SA_CHECK(f.size() == columns, "{}:{}: {} columns, but line {} has {}", path, n, f.size(), first_line, columns);
    std::string token = f.front();
    // PAN-X as distributed prefixes every token with its language ("de:Anton"); the file's first
    // token decides, so a token such as "10:30" in an unprefixed file stays whole.
    auto prefixed = [](const std::string& t) {
      return t.size() > 3 && t[2] == ':' && std::islower(static_cast<unsigned char>(t[0])) &&
             std::islower(static_cast<unsigned char>(t[1]));
    };
    if (panx && c.sentences.empty() && cur.tokens.empty()) strip_prefix = prefixed(token);
    if (strip_prefix && prefixed(token)) token = token.substr(3);
    check_iob_tag(f.back(), path, n);
    cur.tokens.push_back(token);
    cur.tags.push_back(f.back());
  }
  flush();
  return c;
}

}  // namespace

std::string latin1_to_utf8(const std::string& s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (unsigned char ch : s) {
    if (ch < 0x80) {
      out += static_cast<char>(ch);
    } else {
      out += static_cast<char>(0xC0 | (ch >> 6));
      out += static_cast<char>(0x80 | (ch & 0x3F));
    }
  }
  return out;
}

NerCorpus read_conll_ner(const std::string& path) { return read_columns(path, ' ', false); }
NerCorpus read_panx(const std::string& path) { return read_columns(path, '\t', true); }

std::vector<std::string> iob_to_bioes(const std::vector<std::string>& tags) {
  const size_t n = tags.size();
  // Chunk starts: B-, or I- after O or after another type (IOB1 opens chunks with I-).
  auto starts = [&](size_t i) {
    if (tags[i] == "O") return false;
    if (tags[i][0] == 'B' || i == 0 || tags[i - 1] == "O") return true;
    return type_of(tags[i - 1]) != type_of(tags[i]);
  };
  std::vector<std::string> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (tags[i] == "O") {
      out[i] = "O";
      continue;
    }
    const bool begin = starts(i), end = i + 1 == n || tags[i + 1] == "O" || starts(i + 1);
    out[i] = std::string(begin ? (end ? "S-" : "B-") : (end ? "E-" : "I-")) + type_of(tags[i]);
  }
  return out;
}

std::vector<std::string> bioes_to_iob2(const std::vector<std::string>& tags) {
  std::vector<std::string> out(tags.size());
  std::string open;  // the type of the chunk in progress, "" when none
  for (size_t i = 0; i < tags.size(); ++i) {
    const std::string& t = tags[i];
    if (t == "O" || t.size() < 3) {
      out[i] = "O", open.clear();
      continue;
    }
    const char k = t[0];
    const std::string type = type_of(t);
    const bool continues = (k == 'I' || k == 'E') && open == type;
    out[i] = (continues ? "I-" : "B-") + type;
    open = (k == 'B' || k == 'I') ? type : std::string();
  }
  return out;
}

}  // namespace sa
