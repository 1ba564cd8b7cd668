// bin/bench: performance. `bench ops` times each op against what it replaces, `bench train` a
// config's training steps and `bench embed` a model's embedding, each beside the reference
// implementations (bilm-tf, PyTorch) in the same run, `bench memory` a long run's memory. The
// subcommands live in train/bench*.cpp and train/memory_bench.cpp; this file reads the command line.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <set>

#include "engine/core/error.h"
#include "engine/engine.h"
#include "train/bench.h"
#include "train/memory_bench.h"

using namespace sa;

int main(int argc, char** argv) {
  // Line by line even into a file: the GPU jobs run each bench under `timeout`, whose kill
  // otherwise drops every buffered line ("printed nothing" could not tell a slow run from a hang).
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  CLI::App app{"SenseAlign benchmarks"};
  app.require_subcommand(1);
  CLI::App* ops_cmd = app.add_subcommand("ops", "GEMM GFLOP/s vs raw BLAS/cuBLAS, elementwise GB/s, fused cells");
  std::string device = "all";
  bool quick = false;
  ops_cmd->add_option("--device", device, "cpu, cuda, cuda:N or all (cpu and every visible GPU)");
  ops_cmd->add_flag("--quick", quick, "small sizes and few iterations (a smoke run)");
  std::vector<std::string> only_groups;
  ops_cmd->add_option("--only", only_groups, "run only these groups: core, elementwise, lstm, bilstm, ner, candidate_softmax, "
                                             "select_rows, negatives, char_cnn, crf, attention")
      ->delimiter(',')
      ->check(CLI::IsMember({"core", "elementwise", "lstm", "bilstm", "ner", "candidate_softmax", "select_rows", "negatives",
                             "char_cnn", "crf", "attention"}));
  CLI::App* train_cmd = app.add_subcommand("train", "training tokens/s and peak memory (ELMo: beside bilm-tf and PyTorch; BERT configs too)");
  TrainBenchArgs tb;
  train_cmd->add_option("--config", tb.config, "training config");
  train_cmd->add_option("--corpus", tb.corpus, "training corpus (default: the config's train_prefix)");
  train_cmd->add_option("--steps", tb.steps, "timed steps (after 5 warm-up steps)")
      ->check(CLI::Validator(positive_integer, "POSITIVE"));
  train_cmd->add_option("--device", tb.device, "auto, cpu, cuda or cuda:N");
  train_cmd->add_option("--peer", tb.peers, "reference implementations run beside ours: bilm-tf, torch (make peers), "
                                           "torch-debian (Debian's python3-torch); auto: each one installed (default); "
                                           "\"\" for none")
      ->delimiter(',');
  train_cmd->add_flag("--phases", tb.time_phases, "also time each phase of a step (waits for the device between them)");
  train_cmd->add_option("--profile", tb.profile,
                        "write gperftools' CPU profile of the timed steps to FILE (needs libprofiler.so.0)");
  train_cmd->add_flag("--no-arithmetic", tb.no_arithmetic,
                      "on the CPU, skip every primitive's arithmetic: the step's host path alone, per step and "
                      "(with --phases) per op");
  train_cmd->add_flag("--replay-audit", tb.replay_audit,
                      "on the CPU, compare each timed step's primitives with the step before's: what replaying a "
                      "captured step would have to change (shapes, scalar arguments, buffers)");
  train_cmd->add_option("--set", tb.overrides, "key=value config overrides, as bin/train (e.g. lstm.cudnn=on)");
  CLI::App* embed_cmd = app.add_subcommand("embed", "embedding tokens/s and peak memory beside bilm-tf's dump_bilm_embeddings");
  EmbedBenchArgs eb;
  embed_cmd->add_option("--model", eb.model, "a run or bin/export directory (options.json, weights.hdf5, vocab.txt)")->required();
  embed_cmd->add_option("--input", eb.input, "one tokenized sentence per line")->required();
  embed_cmd->add_option("--batch-size", eb.batch_size, "sentences per batch (ours)")
      ->check(CLI::Validator(positive_integer, "POSITIVE"));
  embed_cmd->add_option("--device", eb.device, "cpu, cuda or cuda:N (ours; the peers run on the CPU)");
  embed_cmd->add_option("--peer", eb.peers, "bilm-tf, or auto (each one installed; default), or \"\" for none")->delimiter(',');
  CLI::App* memory_cmd = app.add_subcommand("memory", "resident memory over a long training run and a long embedding run");
  MemoryBenchOptions mem;
  memory_cmd->add_option("--config", mem.config, "training config");
  memory_cmd->add_option("--corpus", mem.corpus, "training corpus, also embedded (default: the config's train_prefix)");
  memory_cmd->add_option("--steps", mem.steps, "training steps")->check(CLI::Validator(positive_integer, "POSITIVE"));
  memory_cmd->add_option("--embed-tokens", mem.embed_tokens, "tokens to embed with the trained model")
      ->check(CLI::Validator(positive_integer, "POSITIVE"));
  memory_cmd->add_option("--sample-every", mem.sample_every, "training steps between samples")
      ->check(CLI::Validator(positive_integer, "POSITIVE"));
  memory_cmd->add_option("--set", mem.overrides, "key=value config overrides, as bin/train");
  CLI11_PARSE(app, argc, argv);
  try {
    if (train_cmd->parsed()) return bench_train(tb);
    if (memory_cmd->parsed()) return bench_memory(mem);
    if (embed_cmd->parsed()) return bench_embed(eb);
    std::vector<Device> devs;
    if (device == "all") {
      devs.push_back(Device::cpu());
      for (int i = 0; i < cuda_device_count(); ++i) devs.push_back(Device::cuda(i));
      if (cuda_device_count() == 0)
        std::printf("no GPU visible (%s): CPU only\n", cuda_built() ? "built with CUDA" : "built with CUDA=0");
    } else {
      devs.push_back(resolve_device(device));
    }
    const std::set<std::string> only(only_groups.begin(), only_groups.end());
    for (Device d : devs) bench_ops(d, quick, only);
  } catch (const std::exception& e) {
    return tool_failure("bench", e);
  }
  return 0;
}
