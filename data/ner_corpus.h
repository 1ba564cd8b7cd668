// NER data: CoNLL-2002/2003 column files and PAN-X (WikiANN) TSV files, and the tag schemes
// training and scoring use. Tags are read as IOB (IOB1 in CoNLL-2003, IOB2 elsewhere), trained
// and decoded in BIOES, and written as IOB2.
#pragma once
#include <string>
#include <vector>

namespace sa {

struct NerSentence {
  std::vector<std::string> tokens, tags;
};

struct NerCorpus {
  std::vector<NerSentence> sentences;
  int documents = 0;        // -DOCSTART- breaks seen
  bool latin1 = false;      // the file was not UTF-8 and was read as ISO-8859-1
};

// A CoNLL column file: the token first, the NER tag last, columns split by spaces; a blank line
// ends a sentence; "-DOCSTART-" lines break documents and are not sentences. A file that is not
// valid UTF-8 is read as ISO-8859-1 (CoNLL-2003 German) and converted. Fails naming the file and
// line for a column count that differs from the file's first line, or a tag that is not O,
// B-TYPE or I-TYPE.
NerCorpus read_conll_ner(const std::string& path);
// PAN-X: "token<TAB>tag" lines, blank lines between sentences; a "xx:" language prefix on a
// token is dropped. The same checks.
NerCorpus read_panx(const std::string& path);

// IOB1 or IOB2 -> BIOES (a chunk starts at B-, or at I- after O or after another type).
std::vector<std::string> iob_to_bioes(const std::vector<std::string>& tags);
// BIOES -> IOB2; invalid sequences (I- or E- with no open chunk of their type) open a chunk.
std::vector<std::string> bioes_to_iob2(const std::vector<std::string>& tags);
// ISO-8859-1 bytes -> UTF-8.
std::string latin1_to_utf8(const std::string& s);

}  // namespace sa
