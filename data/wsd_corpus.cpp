#include "data/wsd_corpus.h"
#include "data/input_limits.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <pugixml.hpp>
#include <sstream>

#include "data/atomic_file.h"
#include "data/corpus.h"
#include "data/vocab.h"
#include "data/wordnet.h"
#include "engine/core/error.h"

namespace sa {

namespace fs = std::filesystem;

size_t WsdCorpus::instances() const {
  size_t n = 0;
  for (const WsdSentence& s : sentences)
    for (const WsdToken& t : s.tokens) n += !t.id.empty();
  return n;
}

std::vector<std::string> surface_words(const std::string& surface) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : surface) {
    if (ch == ' ' || ch == '_' || ch == '\t') {
      if (!cur.empty()) out.push_back(std::move(cur)), cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

namespace {

int line_of(const std::string& path, ptrdiff_t offset) {
  std::ifstream f(path, std::ios::binary);
  int line = 1;
  for (char ch; offset-- > 0 && f.get(ch);) line += ch == '\n';
  return line;
}

std::string escape_xml(const std::string& s) {
  std::string o;
  for (char ch : s) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += ch;
    }
  }
  return o;
}

}  // namespace

WsdCorpus read_wsd_xml(const std::string& path) {
  check_not_directory(path);
  pugi::xml_document doc;
  // parse_default keeps entity decoding; offsets let errors name the line.
  pugi::xml_parse_result r = doc.load_file(path.c_str());
  if (r.status == pugi::status_file_not_found || r.status == pugi::status_io_error)
    fail("{}: cannot open WSD corpus", path);
  SA_CHECK(r, "{}:{}: malformed XML: {}", path, line_of(path, r.offset), r.description());
  // Element positions for error messages.
  auto where = [&](const pugi::xml_node& n) { return fmt::format("{}:{}", path, line_of(path, n.offset_debug())); };
  pugi::xml_node corpus = doc.child("corpus");
  SA_CHECK(corpus, "{}: expected a <corpus> root element (Raganato et al. unified format)", path);
  WsdCorpus out;
  out.source = corpus.attribute("source").as_string();
  for (pugi::xml_node text : corpus.children()) {
    SA_CHECK(std::string(text.name()) == "text", "{}: expected <text> inside <corpus>, got <{}>", where(text), text.name());
    for (pugi::xml_node sent : text.children()) {
      SA_CHECK(std::string(sent.name()) == "sentence", "{}: expected <sentence> inside <text>, got <{}>", where(sent),
               sent.name());
      WsdSentence s;
      s.id = sent.attribute("id").as_string();
      SA_CHECK(!s.id.empty(), "{}: <sentence> without an id", where(sent));
      for (pugi::xml_node tok : sent.children()) {
        const std::string name = tok.name();
        SA_CHECK(name == "wf" || name == "instance", "{}: expected <wf> or <instance>, got <{}>", where(tok), name);
        WsdToken t;
        t.surface = tok.child_value();
        t.lemma = tok.attribute("lemma").as_string();
        t.pos = tok.attribute("pos").as_string();
        SA_CHECK(valid_utf8(t.surface) && !surface_words(t.surface).empty(), "{}: <{}> with an empty or non-UTF-8 word",
                 where(tok), name);
        if (name == "instance") {
          t.id = tok.attribute("id").as_string();
          SA_CHECK(!t.id.empty() && !t.lemma.empty() && !t.pos.empty(),
                   "{}: <instance> needs id, lemma and pos attributes", where(tok));
        }
        s.tokens.push_back(std::move(t));
      }
      SA_CHECK(!s.tokens.empty(), "{}: empty sentence {}", where(sent), s.id);
      out.sentences.push_back(std::move(s));
    }
  }
  SA_CHECK(!out.sentences.empty(), "{}: no sentences", path);
  return out;
}

void write_wsd_xml(const WsdCorpus& c, const std::string& path) {
  std::ostringstream f;
  f << "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n<corpus lang=\"en\" source=\"" << escape_xml(c.source) << "\">\n";
  std::string doc;
  for (const WsdSentence& s : c.sentences) {
    const std::string d = s.id.substr(0, s.id.find('.'));
    if (d != doc) {
      if (!doc.empty()) f << "</text>\n";
      f << "<text id=\"" << escape_xml(d) << "\">\n";
      doc = d;
    }
    f << "<sentence id=\"" << escape_xml(s.id) << "\">\n";
    for (const WsdToken& t : s.tokens) {
      const char* tag = t.id.empty() ? "wf" : "instance";
      f << "<" << tag;
      if (!t.id.empty()) f << " id=\"" << escape_xml(t.id) << "\"";
      f << " lemma=\"" << escape_xml(t.lemma) << "\" pos=\"" << escape_xml(t.pos) << "\">" << escape_xml(t.surface)
        << "</" << tag << ">\n";
    }
    f << "</sentence>\n";
  }
  if (!doc.empty()) f << "</text>\n";
  f << "</corpus>\n";
  write_file_atomically(path, f.str());
}

WsdKeys read_wsd_keys(const std::string& path) {
  std::ifstream f(path);
  SA_CHECK(f, "{}: cannot open key file", path);
  WsdKeys keys;
  std::string line;
  for (int lineno = 1; read_line(f, line, path, lineno); ++lineno) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::istringstream ss(line);
    std::string id, k;
    ss >> id;
    std::vector<std::string>& v = keys[id];
    while (ss >> k) {
      SA_CHECK(k.find('%') != std::string::npos, "{}:{}: \"{}\" is not a WordNet sense key (lemma%ss:lf:lx:hw:hx)", path,
               lineno, k);
      if (std::find(v.begin(), v.end(), k) == v.end()) v.push_back(k);
    }
    SA_CHECK(!v.empty(), "{}:{}: expected an instance id followed by at least one sense key", path, lineno);
  }
  return keys;
}

void write_wsd_keys(const WsdKeys& keys, const std::string& path) {
  std::string text;
  for (const auto& [id, ks] : keys) {
    text += id;
    for (const std::string& k : ks) text += ' ' + k;
    text += '\n';
  }
  write_file_atomically(path, text);
}

std::string gold_key_path(const std::string& xml) {
  const std::string suffix = ".data.xml";
  SA_CHECK(xml.size() > suffix.size() && xml.compare(xml.size() - suffix.size(), suffix.size(), suffix) == 0,
           "{}: expected a NAME.data.xml file (its gold keys are read from NAME.gold.key.txt)", xml);
  return xml.substr(0, xml.size() - suffix.size()) + ".gold.key.txt";
}

std::string wsd_set_name(const std::string& xml) {
  std::string base = fs::path(xml).filename().string();
  const size_t dot = base.find('.');
  return dot == std::string::npos ? base : base.substr(0, dot);
}

namespace {

// Attributes of one SemCor tag line: <wf cmd=done pos=NN lemma=x wnsn=1 lexsn=1:09:00::>word</wf>
std::map<std::string, std::string> tag_attributes(const std::string& line, size_t end) {
  std::map<std::string, std::string> a;
  std::istringstream ss(line.substr(0, end));
  std::string item;
  ss >> item;  // <wf
  while (ss >> item) {
    const size_t eq = item.find('=');
    if (eq != std::string::npos) a[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return a;
}

// Penn Treebank tags of SemCor -> the framework's universal tags.
std::string universal_pos(const std::string& penn) {
  static const std::map<std::string, std::string> m = {
      {"NN", "NOUN"}, {"NNS", "NOUN"}, {"NNP", "NOUN"}, {"NNPS", "NOUN"}, {"VB", "VERB"},  {"VBD", "VERB"},
      {"VBG", "VERB"}, {"VBN", "VERB"}, {"VBP", "VERB"}, {"VBZ", "VERB"},  {"MD", "VERB"},  {"JJ", "ADJ"},
      {"JJR", "ADJ"},  {"JJS", "ADJ"},  {"RB", "ADV"},   {"RBR", "ADV"},   {"RBS", "ADV"},  {"WRB", "ADV"},
      {"DT", "DET"},   {"PDT", "DET"},  {"WDT", "DET"},  {"IN", "ADP"},    {"CC", "CONJ"},  {"CD", "NUM"},
      {"PRP", "PRON"}, {"PRP$", "PRON"}, {"WP", "PRON"}, {"WP$", "PRON"}, {"EX", "PRON"},  {"TO", "PRT"},
      {"RP", "PRT"},   {"POS", "PRT"},  {"UH", "X"},     {"FW", "X"},      {"SYM", "X"}};
  auto it = m.find(penn);
  return it == m.end() ? "X" : it->second;
}

std::string lower(std::string s) {
  lowercase_ascii(s);
  return s;
}

}  // namespace

SemcorConversion read_semcor(const std::string& dir, const WordNetSenses* wn) {
  SemcorConversion out;
  out.corpus.source = "semcor";
  std::vector<fs::path> files;
  for (const char* part : {"brown1", "brown2", "brownv"}) {
    const fs::path tags = fs::path(dir) / part / "tagfiles";
    SA_CHECK(fs::is_directory(tags), "{}: expected SemCor 3.0's {}/tagfiles directory", dir, part);
    std::vector<fs::path> here;
    for (const auto& e : fs::directory_iterator(tags))
      if (e.is_regular_file()) here.push_back(e.path());
    std::sort(here.begin(), here.end());
    files.insert(files.end(), here.begin(), here.end());
  }
  SA_CHECK(!files.empty(), "{}: no SemCor tag files", dir);
  for (size_t d = 0; d < files.size(); ++d) {
    const std::string path = files[d].string();
    std::ifstream f(path);
    SA_CHECK(f, "{}: cannot open", path);
    WsdSentence* s = nullptr;
    int n_sent = 0, n_inst = 0;
    std::string line;
    for (int lineno = 1; read_line(f, line, path, lineno); ++lineno) {
      auto bad = [&](const char* what) { fail("{}:{}: {}: {}", path, lineno, what, line); };
      if (line.rfind("<s ", 0) == 0) {
        out.corpus.sentences.push_back({fmt::format("d{:03}.s{:03}", d, n_sent++), {}});
        s = &out.corpus.sentences.back();
        n_inst = 0;
      } else if (line == "</s>") {
        if (!s) bad("</s> without <s>");
        if (s->tokens.empty()) bad("empty sentence");
        s = nullptr;
      } else if (line.rfind("<wf ", 0) == 0 || line.rfind("<punc>", 0) == 0) {
        if (!s) bad("a word outside <s>");
        const size_t gt = line.find('>'), close = line.rfind("</");
        if (gt == std::string::npos || close == std::string::npos || close <= gt) bad("expected <wf ...>word</wf>");
        WsdToken t;
        t.surface = line.substr(gt + 1, close - gt - 1);
        if (!valid_utf8(t.surface) || surface_words(t.surface).empty()) bad("an empty or non-UTF-8 word");
        if (line[1] == 'p') {
          t.lemma = t.surface;
          t.pos = ".";
        } else {
          auto a = tag_attributes(line, gt);
          t.pos = universal_pos(a["pos"]);
          t.lemma = a.count("lemma") ? a["lemma"] : lower(t.surface);
          std::vector<std::string> keys;
          if (a["cmd"] == "done" && a.count("lemma") && a.count("lexsn")) {
            std::stringstream lex(a["lexsn"]);
            for (std::string x; std::getline(lex, x, ';');) {
              if (x.size() < 2 || x[1] != ':' || x[0] < '1' || x[0] > '5') bad("lexsn is not ss_type:lex_filenum:...");
              keys.push_back(lower(a["lemma"]) + "%" + x);
            }
            if (keys.empty()) bad("empty lexsn");
            if (wn) {
              auto stale = std::stable_partition(keys.begin(), keys.end(), [&](const std::string& k) { return wn->contains(k); });
              for (auto it = stale; it != keys.end(); ++it) out.dropped[*it]++, out.dropped_keys++;
              keys.erase(stale, keys.end());
              out.dropped_instances += keys.empty();
            }
          }
          if (!keys.empty()) {
            static const char* kPos[] = {"", "NOUN", "VERB", "ADJ", "ADV", "ADJ"};
            t.pos = kPos[keys[0][keys[0].find('%') + 1] - '0'];
            t.lemma = lower(a["lemma"]);
            t.id = fmt::format("{}.t{:03}", s->id, n_inst++);
            out.keys[t.id] = std::move(keys);
          }
        }
        s->tokens.push_back(std::move(t));
      }
    }
    SA_CHECK(!s, "{}: the file ends inside a sentence", path);
  }
  out.files = files.size();
  return out;
}

}  // namespace sa
