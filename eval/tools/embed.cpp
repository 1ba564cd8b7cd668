// bin/embed: contextual embeddings of a text file in the bilm-tf/AllenNLP HDF5 layout.
//   bin/embed --model RUN_DIR --input FILE --output OUT.hdf5
//   bin/embed --options options.json --weights weights.hdf5 [--vocab vocab.txt] --input FILE --output OUT.hdf5
// One dataset per input line named by its 0-based index: [n_layers+1, n_tokens, 2P] float32
// (--layers all), or [n_tokens, 2P] (top, average); plus sentence_to_index. --align W applies a
// map from `bin/align fit` to every layer (or W.layer{layer}.txt, one per layer).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data/corpus.h"
#include "data/hdf5_file.h"
#include "data/progress_line.h"
#include "data/vocab.h"
#include "eval/aligned_encoder.h"
#include "eval/encoder_options.h"
#include "layers/load_encoder.h"

using namespace sa;

namespace {

// Lines as tokens (lowercased when the model was trained so); the original lines key the index.
std::vector<std::vector<std::string>> read_sentences(const std::string& path, std::vector<std::string>& lines,
                                                     bool lowercase) {
  check_not_directory(path);
  std::ifstream f(path);
  SA_CHECK(f, "{}: cannot open input file", path);
  std::vector<std::vector<std::string>> out;
  std::string line;
  for (int lineno = 1; std::getline(f, line); ++lineno) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF: the line is a sentence_to_index key
    require_utf8(line, path, lineno);
    std::vector<std::string> toks = split_tokens(line);
    if (lowercase)
      for (std::string& w : toks) lowercase_ascii(w);
    SA_CHECK(!toks.empty(), "{}:{}: empty line (one tokenized sentence per line expected; keys follow line numbers)",
             path, lineno);
    out.push_back(std::move(toks));
    lines.push_back(line);
  }
  SA_CHECK(!out.empty(), "{}: no sentences", path);
  return out;
}


}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Contextual ELMo embeddings in the bilm-tf/AllenNLP HDF5 layout"};
  EncoderOptions model;
  std::string input, output, layers = "all", device = "auto", align;
  int batch = 64;
  bool stateful = false;
  model.add_to(&app);
  app.add_option("--input", input, "one tokenized sentence per line")->required();
  app.add_option("--output", output, "HDF5 file to write")->required();
  app.add_option("--layers", layers, "all, top or average")->check(CLI::IsMember({"all", "top", "average"}));
  app.add_option("--batch-size", batch, "sentences per batch")->check(CLI::Validator(positive_integer, "POSITIVE"));
  app.add_option("--align", align,
                 "a map from `bin/align fit` applied to every layer; \"{layer}\" in the name picks one per layer");
  app.add_flag("--stateful", stateful, "carry LSTM state from batch row k to row k of the next batch (bilm-tf)");
  app.add_option("--device", device, "auto, cpu, cuda or cuda:N");
  CLI11_PARSE(app, argc, argv);
  try {
    model.check();
    std::unique_ptr<ContextualEncoder> enc = load_encoder(model.source, resolve_device(device));
    std::vector<std::string> lines;
    auto sents = read_sentences(input, lines, enc->lowercase);
    std::printf("embed: %s, %zu sentences -> %s (layers %s, %s)\n", enc->origin.c_str(), sents.size(), output.c_str(),
                layers.c_str(), enc->device().str().c_str());
    std::vector<Tensor> maps;  // per layer
    if (!align.empty()) maps = read_layer_maps(align, enc->n_layers(), enc->dim(), enc->device());
    std::unique_ptr<EncoderState> state = stateful ? enc->new_state(batch) : nullptr;
    // Written to a temporary file and put in place only when complete and closed without error.
    write_hdf5_atomically(output, [&](H5File& out) {
      auto write = [&](size_t i, const Tensor& emb) {
        NoGrad ng;
        Tensor e = emb;
        if (!align.empty()) e = apply_alignment(e, maps);
        if (layers == "top") e = ops::reshape(ops::slice(e, 0, e.dim(0) - 1, e.dim(0)), {e.dim(1), e.dim(2)});
        if (layers == "average") e = ops::mean(e, 0);
        out.write(std::to_string(i), e);
      };
      if (stateful) {  // batch k's row r carries on from batch k - 1's row r: the file's order
        auto t0 = std::chrono::steady_clock::now();
        ProgressLine progress;
        size_t tokens = 0;
        for (size_t b = 0; b < sents.size(); b += static_cast<size_t>(batch)) {
          std::vector<std::vector<std::string>> chunk(sents.begin() + static_cast<long>(b),
                                                      sents.begin() + static_cast<long>(std::min(sents.size(), b + batch)));
          std::vector<Tensor> embs = enc->embed(chunk, state.get());
          for (size_t i = 0; i < embs.size(); ++i) write(b + i, embs[i]), tokens += chunk[i].size();
          double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          const size_t done = std::min(sents.size(), b + batch);
          progress.update(fmt::format("embed: {}/{} sentences, {:.0f} tokens/s", done, sents.size(), tokens / std::max(el, 1e-9)),
                          done == sents.size());
        }
      } else {
        // Batches of similar length, as every other tool (and the Python module) embeds: a
        // sentence's vectors depend on its batch in the last bits (the BLAS's kernels differ
        // with a product's rows), so the same batches give the same vectors.
        embed_all(*enc, sents, batch, "embed", write);
      }
      nlohmann::json index = nlohmann::json::object();  // in line order: a repeated line keys its last copy
      for (size_t i = 0; i < lines.size(); ++i) index[lines[i]] = std::to_string(i);
      out.write_string("sentence_to_index", index.dump());
    });
  } catch (const std::exception& e) {
    return tool_failure("embed", e);
  }
  return 0;
}
