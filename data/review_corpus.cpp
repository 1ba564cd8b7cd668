#include "data/review_corpus.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "data/vocab.h"
#include "engine/core/error.h"

namespace sa {

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SA_CHECK(in, "{}: cannot open", path);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  require_utf8(text, path);
  return text;
}

bool parse_number(const std::string& s, double& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// RFC 4180 records; `line` gets the line each record starts on.
std::vector<std::vector<std::string>> csv_records(const std::string& text, std::vector<int>& line) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  int n = 1, start = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c, n += c == '\n';
      continue;
    }
    if (c == '"') {
      quoted = any = true;
    } else if (c == ',') {
      row.push_back(std::move(field)), field.clear(), any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) row.push_back(std::move(field)), rows.push_back(std::move(row)), line.push_back(start);
      field.clear(), row.clear(), any = false;
      start = ++n;
    } else {
      field += c, any = true;
    }
  }
  if (any || !field.empty()) row.push_back(std::move(field)), rows.push_back(std::move(row)), line.push_back(start);
  return rows;
}

std::string decode_entities(std::string s) {
  static const std::pair<const char*, const char*> kEntities[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&apos;", "'"}, {"&amp;", "&"}};
  for (auto [from, to] : kEntities)
    for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += std::string(to).size())
      s.replace(at, std::string(from).size(), to);
  return s;
}

// The text between <tag> and </tag> in [from, to) of s, trimmed; false when either is missing.
bool element(const std::string& s, size_t from, size_t to, const std::string& tag, std::string& out) {
  const size_t a = s.find("<" + tag + ">", from);
  if (a == std::string::npos || a >= to) return false;
  const size_t b = s.find("</" + tag + ">", a);
  if (b == std::string::npos || b > to) return false;
  out = s.substr(a + tag.size() + 2, b - a - tag.size() - 2);
  const size_t first = out.find_first_not_of(" \t\r\n"), last = out.find_last_not_of(" \t\r\n");
  out = first == std::string::npos ? std::string() : out.substr(first, last - first + 1);
  return true;
}

}  // namespace

int sentiment_label(double stars) { return stars <= 2 ? 0 : stars >= 4 ? 1 : -1; }

ReviewSet read_marc_csv(const std::string& path) {
  std::vector<int> line;
  const auto rows = csv_records(read_all(path), line);
  ReviewSet set;
  for (size_t r = 0; r < rows.size(); ++r) {
    SA_CHECK(rows[r].size() == 3, "{}:{}: expected 3 fields (id, text, stars), got {}", path, line[r], rows[r].size());
    double stars = 0;
    if (!parse_number(rows[r][2], stars)) {
      SA_CHECK(r == 0, "{}:{}: the rating '{}' is not a number", path, line[r], rows[r][2]);
      continue;  // the header row
    }
    set.reviews.push_back({rows[r][0], rows[r][1], stars});
  }
  return set;
}

ReviewSet read_webis_cls(const std::string& path) {
  const std::string s = read_all(path);
  ReviewSet set;
  for (size_t at = 0; (at = s.find("<item>", at)) != std::string::npos;) {
    size_t end = s.find("</item>", at);
    const size_t next = s.find("<item>", at + 6);
    if (end == std::string::npos || (next != std::string::npos && next < end)) end = next == std::string::npos ? s.size() : next;
    std::string rating, text;
    double stars = 0;
    if (element(s, at, end, "rating", rating) && element(s, at, end, "text", text) && parse_number(rating, stars) &&
        !text.empty())
      set.reviews.push_back({std::to_string(set.reviews.size()), decode_entities(text), stars});
    else
      ++set.skipped;
    at = end;
  }
  return set;
}

}  // namespace sa
