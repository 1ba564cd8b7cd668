#include "tests/fuzz/fuzz_targets.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "data/char_ids.h"
#include "data/corpus.h"
#include "data/dictionary.h"
#include "data/hdf5_file.h"
#include "data/ner_corpus.h"
#include "data/nli_corpus.h"
#include "data/review_corpus.h"
#include "data/run_files.h"
#include "data/safetensors.h"
#include "data/vocab.h"
#include "data/wordnet.h"
#include "data/wordpiece.h"
#include "data/wsd_corpus.h"
#include "eval/alignment.h"
#include "eval/anchors.h"
#include "eval/pseudo_words.h"
#include "layers/bert.h"
#include "layers/elmo.h"
#include "tests/tiny_elmo.h"
#include "train/checkpoint.h"
#include "train/config.h"

namespace sa::fuzz {

namespace {

namespace fs = std::filesystem;

// The config's text, then (after a NUL byte) one `--set key=value` a line.
void read_config(const std::string& path) {
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::vector<std::string> sets;
  if (const size_t nul = bytes.find('\0'); nul != std::string::npos) {
    std::string rest = bytes.substr(nul + 1);
    bytes.resize(nul);
    for (size_t at = 0; at <= rest.size();) {
      const size_t end = std::min(rest.find('\n', at), rest.size());
      sets.push_back(rest.substr(at, end - at));
      at = end + 1;
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
  TrainConfig::load(path, sets);
}

void read_wordpiece(const std::string& path) {
  BasicTokenizerOptions o;
  o.lowercase = true;
  WordPieceTokenizer tok(WordPieceVocab::load(path), o);
  tok.encode("Unaffable naïve résumé, 北京 ##x [MASK] don't");
}

void read_hdf5(const std::string& path) {
  H5File f = H5File::open(path);
  for (const std::string& name : f.list("/")) f.read("/" + name);
  ElmoModel::load_bilm(testing::tiny_elmo_options(), path);
}

// metrics.jsonl, as bin/runs reads it.
void read_metrics(const std::string& path) { run_files::read_metrics(path); }

void read_checkpoint(const std::string& path) {
  const SafetensorsFile f = load_safetensors(path);
  check_checkpoint_metadata(f);
}

}  // namespace

const std::vector<FuzzTarget>& fuzz_targets() {
  static const std::vector<FuzzTarget> targets = {
      {"config", "fuzz.cfg", read_config},
      {"vocab", "vocab.txt", [](const std::string& p) { Vocab::load(p); }},
      {"corpus", "corpus.txt",
       [](const std::string& p) {
         int32_t ids[chars::kPerToken];
         for (const Sentence& s : read_sentences(p, true))
           for (const std::string& w : s) chars::token_ids(w, ids);
         count_tokens(p, false);
       }},
      {"muse", "dict.txt", [](const std::string& p) { read_dictionary(p, "muse"); }},
      {"cedict", "cedict.u8", [](const std::string& p) { read_dictionary(p, "cedict"); }},
      {"edict", "edict", [](const std::string& p) { read_dictionary(p, "edict"); }},
      {"ding", "de-en.txt", [](const std::string& p) { read_dictionary(p, "ding"); }},
      {"wsd_xml", "set.data.xml", [](const std::string& p) { read_wsd_xml(p); }},
      {"wsd_keys", "set.gold.key.txt", [](const std::string& p) { read_wsd_keys(p); }},
      {"wordnet", "index.sense", [](const std::string& p) { WordNetSenses::load(p); }},
      {"conll_ner", "ner.conll", [](const std::string& p) { read_conll_ner(p); }},
      {"panx", "panx.txt", [](const std::string& p) { read_panx(p); }},
      {"nli_tsv", "nli.tsv", [](const std::string& p) { read_nli_tsv(p); }},
      {"nli_jsonl", "nli.jsonl", [](const std::string& p) { read_nli_jsonl(p); }},
      {"marc_csv", "reviews.csv", [](const std::string& p) { read_marc_csv(p); }},
      {"webis_cls", "reviews.review", [](const std::string& p) { read_webis_cls(p); }},
      {"bilm_options", "options.json",
       [](const std::string& p) { ElmoOptions::from_json(run_files::read_json(p), p); }},
      {"bert_config", "config.json", [](const std::string& p) { BertConfig::from_hf_json(p); }},
      {"safetensors", "model.safetensors", [](const std::string& p) { load_safetensors(p); }},
      {"checkpoint", "ckpt-00000001.safetensors", read_checkpoint},
      {"wordpiece", "vocab.txt", read_wordpiece},
      {"metrics", "metrics.jsonl", read_metrics},
      {"hdf5", "weights.hdf5", read_hdf5},
      {"alignment_map", "W.layer0.txt", [](const std::string& p) { read_map(p); }},
      {"word_vectors", "vectors.txt", [](const std::string& p) { read_word_vectors(p); }},
      {"word_pairs", "pairs.txt", [](const std::string& p) { read_word_pairs(p); }},
  };
  return targets;
}

const FuzzTarget* find_fuzz_target(const std::string& name) {
  for (const FuzzTarget& t : fuzz_targets())
    if (t.name == name) return &t;
  return nullptr;
}

std::string run_fuzz_target(const FuzzTarget& t, const uint8_t* bytes, size_t size) {
  // One folder per process: the fuzzer and the tests may run side by side.
  static const fs::path dir = [] {
    const char* shm = "/dev/shm";
    fs::path d = fs::path(fs::is_directory(shm) ? shm : fs::temp_directory_path().c_str()) /
                 ("sensealign-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  const std::string path = (dir / t.file_name).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(bytes), size);
  try {
    t.read(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace sa::fuzz
