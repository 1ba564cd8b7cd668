// The default corpus: the English text of Debian's debian-handbook package, extracted by
// data/scripts/handbook_corpus.py into the checkout's build/corpus/. The quickstart trains on it, and
// so does a shipped config (configs/) whose data path this machine lacks (../shared/data is only on
// the developers' machines): `./bin/train elmo.cfg` works as typed on a new machine.
#pragma once
#include <string>

namespace sa {

// The checkout bin/ belongs to (bin/.. of the running tool when it holds data/scripts/), else the
// working directory: where build/corpus/ and build/peers/ are.
std::string checkout_root();

struct DefaultCorpus {
  std::string train, heldout;  // relative to the working directory where it lies under it
  std::string script;          // data/scripts/handbook_corpus.py
};

// The default corpus of the checkout bin/ belongs to (or of the working directory).
DefaultCorpus default_corpus();
// Whether `path` names the default corpus's training or held-out file.
bool is_default_corpus(const DefaultCorpus& d, const std::string& path);
// Extracts the default corpus if it is missing (a few seconds); fails saying how to get it
// (`make deps` installs debian-handbook) when it cannot.
void prepare_default_corpus(const DefaultCorpus& d);

}  // namespace sa
