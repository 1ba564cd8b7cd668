// WSD corpora: the unified XML + gold key format of Raganato et al. (2017), and SemCor 3.0 in its
// original tag-file format (converted to the unified one). docs/design.md §5.2.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace sa {

class WordNetSenses;

struct WsdToken {
  std::string surface;  // may hold several words ("Fulton County Grand Jury")
  std::string lemma, pos;
  std::string id;  // instance id; empty for a plain word
};

struct WsdSentence {
  std::string id;
  std::vector<WsdToken> tokens;
};

struct WsdCorpus {
  std::string source;  // the <corpus source="..."> attribute
  std::vector<WsdSentence> sentences;
  size_t instances() const;
};

// instance id -> sense keys
using WsdKeys = std::map<std::string, std::vector<std::string>>;

// The words of a surface form as the language model sees them: split on spaces and underscores.
std::vector<std::string> surface_words(const std::string& surface);

// Readers fail naming the file, the line and what was expected.
WsdCorpus read_wsd_xml(const std::string& path);
void write_wsd_xml(const WsdCorpus& corpus, const std::string& path);
WsdKeys read_wsd_keys(const std::string& path);
void write_wsd_keys(const WsdKeys& keys, const std::string& path);
// The framework's naming: DIR/name.data.xml -> DIR/name.gold.key.txt; `name` for reports.
std::string gold_key_path(const std::string& xml_path);
std::string wsd_set_name(const std::string& xml_path);

// SemCor 3.0 (DIR/brown1, brown2, brownv tag files, in that order, files sorted by name): one
// sentence per <s>, an instance per tagged word (cmd=done with lemma and lexsn), sense key
// lemma%lexsn (several when lexsn lists them with ';'). Ids d000.s000.t000 as in the framework.
// With `wn`, keys missing from WordNet 3.0 are dropped (stale keys of SemCor's automatic mapping
// from older WordNets, as the framework's SemCor drops them), and a word left without keys
// becomes a plain word.
struct SemcorConversion {
  WsdCorpus corpus;
  WsdKeys keys;
  size_t files = 0;
  size_t dropped_keys = 0, dropped_instances = 0;
  std::map<std::string, int> dropped;  // key -> occurrences
};
SemcorConversion read_semcor(const std::string& dir, const WordNetSenses* wn = nullptr);

}  // namespace sa
