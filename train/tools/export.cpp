// bin/export: a trained run as a bilm-tf/AllenNLP bundle (options.json with n_characters = 262
// for inference, weights.hdf5 with bilm-tf's dataset names, vocab.txt), from its latest checkpoint.
//   bin/export --model RUN_DIR --output DIR
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "data/vocab.h"
#include "layers/elmo.h"
#include "train/checkpoint.h"

using namespace sa;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  CLI::App app{"Export a trained ELMo run for bilm-tf, AllenNLP and Flair"};
  std::string run, out;
  app.add_option("--model", run, "run directory")->required();
  app.add_option("--output", out, "directory to write options.json, weights.hdf5 and vocab.txt")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    std::ifstream jf(run + "/options.json");
    SA_CHECK(jf, "{}/options.json: cannot open (is {} a run directory?)", run, run);
    nlohmann::json options = nlohmann::json::parse(jf);
    ElmoModel m = ElmoModel::init(ElmoOptions::from_json(options, run + "/options.json"), 0);
    std::vector<fs::path> ckpts;
    for (auto& e : fs::directory_iterator(run + "/checkpoints"))
      if (e.path().extension() == ".safetensors") ckpts.push_back(e.path());
    SA_CHECK(!ckpts.empty(), "{}/checkpoints: no checkpoint yet", run);
    std::sort(ckpts.begin(), ckpts.end());
    SafetensorsFile f = load_safetensors(ckpts.back().string());
    for (NamedTensor& nt : m.named()) {
      auto it = f.tensors.find(nt.name);
      SA_CHECK(it != f.tensors.end() && it->second.shape() == nt.tensor->shape(), "{}: tensor '{}' missing or misshaped",
               ckpts.back().string(), nt.name);
      nt.tensor->copy_from(it->second.to(DType::F32));
    }
    fs::create_directories(out);
    m.save_bilm(out + "/weights.hdf5");
    options["char_cnn"]["n_characters"] = 262;  // bilm-tf's inference graph requires it
    std::ofstream(out + "/options.json") << options.dump(2) << "\n";
    Vocab::load(run + "/vocab.txt").save(out + "/vocab.txt");
    std::printf("export: %s (step %ld) -> %s/{options.json,weights.hdf5,vocab.txt}\n", ckpts.back().filename().c_str(),
                static_cast<long>(f.metadata.value("step", 0)), out.c_str());
  } catch (const Error& e) {
    std::fprintf(stderr, "export: %s\n", e.what());
    return 1;
  } catch (const nlohmann::json::exception& e) {
    std::fprintf(stderr, "export: %s/options.json: %s\n", run.c_str(), e.what());
    return 1;
  }
  return 0;
}
