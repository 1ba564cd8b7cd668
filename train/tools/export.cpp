// bin/export: a trained run from its latest checkpoint. ELMo: a bilm-tf/AllenNLP bundle
// (options.json with n_characters = 262 for inference, weights.hdf5 with bilm-tf's dataset names,
// vocab.txt). BERT: a Hugging Face directory (config.json, model.safetensors with the standard
// names, vocab.txt, tokenizer_config.json) that BertForMaskedLM.from_pretrained loads.
//   bin/export --model RUN_DIR --output DIR
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "data/run_files.h"
#include "engine/core/error.h"
#include "train/families.h"

using namespace sa;

int main(int argc, char** argv) {
  CLI::App app{"Export a trained run: ELMo for bilm-tf, AllenNLP and Flair; BERT for Hugging Face"};
  std::string run, out;
  app.add_option("--model", run, "run directory")->required();
  app.add_option("--output", out, "directory to write (ELMo: options.json, weights.hdf5, vocab.txt; BERT: Hugging Face's files)")
      ->required();
  CLI11_PARSE(app, argc, argv);
  try {
    // A run without its config.cfg (an older layout) is read as ELMo, whose loader says what is missing.
    const std::string model = std::filesystem::exists(run_files::config(run))
                                  ? TrainConfig::load(run_files::config(run)).model_type
                                  : std::string("elmo");
    model_family(model).export_run(run, out);
  } catch (const std::exception& e) {
    return tool_failure("export", e);
  }
  return 0;
}
