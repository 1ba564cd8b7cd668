#include "eval/nli_task.h"

#include <filesystem>

#include "data/tokenizer.h"

namespace sa {

NliSet read_nli_file(const std::string& path) {
  return std::filesystem::path(path).extension() == ".jsonl" ? read_nli_jsonl(path) : read_nli_tsv(path);
}

NliData prepare_nli(const NliSet& set, const CjkLexicon* lexicon) {
  NliData d;
  d.unlabeled = set.unlabeled;
  for (const NliPair& p : set.pairs) {
    std::vector<std::string> a = tokenize(p.premise, lexicon), b = tokenize(p.hypothesis, lexicon);
    if (a.empty() || b.empty()) {
      ++d.empty;
      continue;
    }
    d.premises.push_back(std::move(a));
    d.hypotheses.push_back(std::move(b));
    d.labels.push_back(static_cast<int32_t>(p.label));
  }
  return d;
}

}  // namespace sa
