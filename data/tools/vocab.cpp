// bin/vocab: a bilm-tf vocabulary from tokenized corpora.
//   bin/vocab CORPUS... [--min-count N] [--max-size N] [--lowercase] -o vocab.txt
#include <CLI/CLI.hpp>
#include <cstdio>

#include "data/vocab.h"
#include "engine/core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"Build a bilm-tf vocabulary (<S> </S> <UNK>, then words by descending count)"};
  std::vector<std::string> corpora;
  std::string out;
  int min_count = 1, max_size = 0;
  bool lowercase = false;
  app.add_option("corpus", corpora, "files or globs, one tokenized sentence per line")->required();
  app.add_option("--min-count", min_count, "keep words seen at least this often");
  app.add_option("--max-size", max_size, "at most this many entries, specials included (0: no limit)");
  app.add_flag("--lowercase", lowercase, "lowercase ASCII letters first");
  app.add_option("-o,--output", out, "vocabulary file to write")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    sa::Vocab v = sa::build_vocab(corpora, min_count, max_size, lowercase);
    v.save(out);
    std::printf("vocab: %d entries -> %s\n", v.size(), out.c_str());
  } catch (const std::exception& e) {
    return sa::tool_failure("vocab", e);
  }
  return 0;
}
