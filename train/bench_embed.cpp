// bench embed: embedding a text with a run's model (tokens/s from the first batch to the last
// vector written, in bilm-tf's HDF5 layout, as bin/embed does; the model's loading excluded), and
// the peers of train/peers.h embedding the same text with the same files (bilm-tf's
// dump_bilm_embeddings) in the same run.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

#include "data/corpus.h"
#include "data/hdf5_file.h"
#include "data/run_files.h"
#include "engine/engine.h"
#include "layers/load_encoder.h"
#include "train/bench.h"
#include "train/families.h"
#include "train/peers.h"

namespace sa {

int bench_embed(const EmbedBenchArgs& args) {
  namespace fs = std::filesystem;
  SA_CHECK(fs::exists(run_files::options(args.model)) && fs::exists(run_files::weights(args.model)),
           "--model {}: expected a run or bin/export directory with options.json, weights.hdf5 and vocab.txt", args.model);
  const std::string dir = (fs::temp_directory_path() / ("sensealign-bench-embed-" + std::to_string(::getpid()))).string();
  fs::create_directories(dir);
  const std::unique_ptr<ContextualEncoder> enc = load_encoder({args.model, "", "", "mean"}, resolve_device(args.device));
  Sentences sents;
  int64_t tokens = 0;
  std::ifstream in(args.input);
  SA_CHECK(in, "{}: cannot open input file", args.input);
  for (std::string line; std::getline(in, line);) {
    Sentence s = split_tokens(line);
    if (s.empty()) continue;
    if (enc->lowercase)
      for (std::string& w : s) lowercase_ascii(w);
    tokens += static_cast<int64_t>(s.size());
    sents.push_back(std::move(s));
  }
  SA_CHECK(!sents.empty(), "{}: no sentences", args.input);
  std::printf("bench embed: %s, %zu sentences, %ld tokens, batch %d, %s\n", args.model.c_str(), sents.size(), (long)tokens,
              args.batch_size, enc->device().str().c_str());
  const auto t0 = std::chrono::steady_clock::now();
  write_hdf5_atomically((fs::path(dir) / "ours.hdf5").string(), [&](H5File& out) {
    embed_all(*enc, sents, args.batch_size, "", [&](size_t i, const Tensor& e) { out.write(std::to_string(i), e); });
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double ours = static_cast<double>(tokens) / s;
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  std::printf("sensealign: %.0f tokens/s | peak RSS %.0f MiB\n", ours, u.ru_maxrss / 1024.0);
  // A run directory's options.json is the training graph's (261 characters); the peers read what
  // bin/export writes, as their users would.
  std::string files = args.model;
  if (fs::exists(run_files::config(args.model))) {
    files = (fs::path(dir) / "export").string();
    model_family(TrainConfig::load(run_files::config(args.model)).model_type).export_run(args.model, files);
  }
  PeerJob job;
  job.options = run_files::options(files), job.weights = run_files::weights(files);
  job.vocab = run_files::vocab(files), job.input = args.input, job.output = (fs::path(dir) / "peer.hdf5").string();
  job.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (const Peer* p : choose_peers(args.peers, true)) report_peer(*p, job, true, ours, dir);
  fs::remove_all(dir);
  return 0;
}

}  // namespace sa
