// bin/export: a trained run as a bilm-tf/AllenNLP bundle (options.json with n_characters = 262
// for inference, weights.hdf5 with bilm-tf's dataset names, vocab.txt), from its latest checkpoint.
//   bin/export --model RUN_DIR --output DIR
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "data/atomic_file.h"
#include "train/run_dir.h"

using namespace sa;

int main(int argc, char** argv) {
  CLI::App app{"Export a trained ELMo run for bilm-tf, AllenNLP and Flair"};
  std::string run, out;
  app.add_option("--model", run, "run directory")->required();
  app.add_option("--output", out, "directory to write options.json, weights.hdf5 and vocab.txt")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    LoadedRun r = load_run(run);
    std::filesystem::create_directories(out);
    r.lm.bilm.save_bilm(out + "/weights.hdf5");
    nlohmann::json options = r.config.bilm_options(r.vocab.size());
    options["char_cnn"]["n_characters"] = 262;  // bilm-tf's inference graph requires it
    write_file_atomically(out + "/options.json", options.dump(2) + "\n");
    r.vocab.save(out + "/vocab.txt");
    std::printf("export: %s (step %ld) -> %s/{options.json,weights.hdf5,vocab.txt}\n", r.checkpoint.c_str(),
                static_cast<long>(r.step), out.c_str());
  } catch (const std::exception& e) {
    return tool_failure("export", e);
  }
  return 0;
}
