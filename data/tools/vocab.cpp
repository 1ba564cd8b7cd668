// bin/vocab: a bilm-tf vocabulary from tokenized corpora, or a BERT one (Hugging Face vocab.txt).
//   bin/vocab CORPUS... [--min-count N] [--max-size N] [--lowercase] -o vocab.txt
//   bin/vocab CORPUS... --wordpiece [--max-size N] [--lowercase] [--keep-accents] -o vocab.txt
//   bin/vocab CORPUS... --word-pieces [--min-count N] [--max-size N] [--lowercase] -o vocab.txt
#include <CLI/CLI.hpp>
#include <cstdio>

#include "data/vocab.h"
#include "data/wordpiece_trainer.h"
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
  bool wordpiece = false, word_pieces = false, keep_accents = false;
  auto* wp = app.add_flag("--wordpiece", wordpiece,
                          "a BERT WordPiece vocabulary learned from the corpora (--max-size pieces; default 30522)");
  app.add_flag("--word-pieces", word_pieces, "a BERT vocabulary of whole words (each word its own piece), as the released SaBERT")
      ->excludes(wp);
  app.add_flag("--keep-accents", keep_accents, "BERT vocabularies: do not strip accents when lowercasing");
  CLI11_PARSE(app, argc, argv);
  try {
    if (wordpiece || word_pieces) {  // BERT: the corpora are raw text, split by BERT's basic tokenizer
      sa::BasicTokenizerOptions basic;
      basic.lowercase = lowercase;
      basic.strip_accents = lowercase && !keep_accents;
      sa::WordPieceVocab v = wordpiece ? sa::train_wordpiece(corpora, {max_size > 0 ? max_size : 30522, 2, basic})
                                       : sa::word_level_vocab(corpora, min_count, max_size, basic);
      v.save(out);
      std::printf("vocab: %d pieces -> %s\n", v.size(), out.c_str());
      return 0;
    }
    sa::Vocab v = sa::build_vocab(corpora, min_count, max_size, lowercase);
    v.save(out);
    std::printf("vocab: %d entries -> %s\n", v.size(), out.c_str());
  } catch (const std::exception& e) {
    return sa::tool_failure("vocab", e);
  }
  return 0;
}
