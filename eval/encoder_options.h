// The encoder options that bin/embed, bin/wsd_eval, bin/align anchors and bin/xling_eval share, so
// one command line names a model the same way in each.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "data/vocab.h"
#include "layers/load_encoder.h"

namespace sa {

struct EncoderOptions {
  EncoderSource source;
  std::string vocab;  // bilm-tf's vocabulary: ELMo reads characters, so it is only checked

  void add_to(CLI::App* app) {
    app->add_option("--model", source.run_dir,
                    "a run directory (ELMo: options.json + weights.hdf5; our BERT runs), or a Hugging Face BERT "
                    "directory (config.json, model.safetensors, vocab.txt)");
    app->add_option("--pieces", source.pieces, "BERT: a word's vector is the mean of its WordPiece vectors, or the first")
        ->check(CLI::IsMember({"mean", "first"}));
    app->add_option("--options", source.options, "bilm-tf options.json");
    app->add_option("--weights", source.weights, "bilm-tf weights.hdf5");
    app->add_option("--vocab", vocab, "bilm-tf vocabulary (checked when given; not needed, ELMo reads characters)");
  }
  // After parsing: a bad --vocab file fails with its file and line, as bilm-tf users would expect.
  void check() const {
    if (!vocab.empty()) Vocab::load(vocab, false);
  }
};

}  // namespace sa
