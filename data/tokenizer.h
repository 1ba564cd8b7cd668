// The tokenization of our corpus scripts (data/scripts/handbook_corpus.py), in C++ for tools that
// read raw text (xling_eval's reviews and NLI sentences): a token is a run of word characters,
// joined through single -, ', ’ or . between word characters ("don't", "e-mail", "3.5"), or any
// other single non-space character. Word and space characters are Python's \w and \s, from the
// generated table data/unicode_classes.inc, so both give the same tokens.
#pragma once
#include <string>
#include <vector>

namespace sa {

std::vector<std::string> tokenize(const std::string& utf8);
// Sentences: split after . ! ? 。 ！ ？ followed by white space, each tokenized; empty ones dropped.
std::vector<std::vector<std::string>> tokenize_sentences(const std::string& utf8);

}  // namespace sa
