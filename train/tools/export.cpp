// bin/export: a trained run from its latest checkpoint. ELMo: a bilm-tf/AllenNLP bundle
// (options.json with n_characters = 262 for inference, weights.hdf5 with bilm-tf's dataset names,
// vocab.txt). BERT: a Hugging Face directory (config.json, model.safetensors with the standard
// names, vocab.txt, tokenizer_config.json) that BertForMaskedLM.from_pretrained loads.
//   bin/export --model RUN_DIR --output DIR
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "data/atomic_file.h"
#include "data/run_files.h"
#include "data/safetensors.h"
#include "data/wordpiece.h"
#include "train/run_dir.h"

using namespace sa;

namespace {

void export_bert(const std::string& run, const std::string& out) {
  const TrainConfig c = TrainConfig::load(run_files::config(run));
  const WordPieceVocab vocab = WordPieceVocab::load(run_files::vocab(run));
  BertConfig bc = c.bert;
  bc.vocab_size = vocab.size();
  const std::string ckpt = run_files::newest_checkpoint(run);
  const SafetensorsFile f = load_safetensors(ckpt);
  BertModel m = BertModel::init(bc, 0);
  for (NamedTensor& nt : m.named()) take_tensor(f, ckpt, nt.name, *nt.tensor);
  std::vector<std::pair<std::string, Tensor>> sense;  // SaBERT's tables, under their own names
  for (auto [ours, theirs] : {std::pair{"sense/0/W", "sense.output.weight"}, {"sense/0/b", "sense.output.bias"},
                              {"sense/0/centers", "sense.centers"}, {"sense/0/enabled", "sense.enabled"},
                              {"sense/0/projection", "sense.projection"}})
    if (auto it = f.tensors.find(ours); it != f.tensors.end())
      sense.emplace_back(theirs, it->second.rank() == 2 && it->second.dim(1) == 1 ? it->second.view({it->second.dim(0)})
                                                                                  : it->second);
  std::filesystem::create_directories(out);
  bc.save_hf_json(out + "/config.json");
  m.save_hf_weights(out + "/model.safetensors", sense);
  vocab.save(out + "/vocab.txt");
  const nlohmann::json tok = {{"tokenizer_class", "BertTokenizer"}, {"do_lower_case", c.lowercase},
                              {"model_max_length", bc.max_positions}};
  write_file_atomically(out + "/tokenizer_config.json", tok.dump(2) + "\n");
  std::printf("export: %s (step %ld) -> %s/{config.json,model.safetensors,vocab.txt,tokenizer_config.json}\n",
              ckpt.c_str(), static_cast<long>(f.metadata.value("step", int64_t{0})), out.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Export a trained run: ELMo for bilm-tf, AllenNLP and Flair; BERT for Hugging Face"};
  std::string run, out;
  app.add_option("--model", run, "run directory")->required();
  app.add_option("--output", out, "directory to write (ELMo: options.json, weights.hdf5, vocab.txt; BERT: Hugging Face's files)")
      ->required();
  CLI11_PARSE(app, argc, argv);
  try {
    if (std::filesystem::exists(run_files::config(run)) && TrainConfig::load(run_files::config(run)).is_bert()) {
      export_bert(run, out);
      return 0;
    }
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
