#include "train/checkpoint.h"

#include <unordered_set>

#include "engine/dist/tensor_collectives.h"

namespace sa {

namespace {

std::string adagrad_name(const std::string& param) { return "adagrad/" + param; }
std::string carried_name(int d, size_t layer, const char* part) {
  return "state/" + std::to_string(d) + "/" + std::to_string(layer) + "/" + part;
}

void restore_model(const SafetensorsFile& f, const std::string& origin, ElmoLM& lm) {
  restore_trained_model(f, origin, lm.named(), lm.heads);
}

}  // namespace

void save_checkpoint(const std::string& path, TrainingState& s, bool write) {
  std::vector<std::pair<std::string, Tensor>> ts;
  for (NamedTensor& nt : s.lm.named()) {
    ts.emplace_back(nt.name, *nt.tensor);
    ts.emplace_back(adagrad_name(nt.name), s.opt.accumulator(*nt.tensor));
  }
  for (int d = 0; d < 2; ++d)
    for (size_t l = 0; l < s.carried.dir[d].size(); ++l) {
      ts.emplace_back(carried_name(d, l, "c"), s.carried.dir[d][l].c);
      ts.emplace_back(carried_name(d, l, "m"), s.carried.dir[d][l].m);
    }
  for (size_t d = 0; d < s.lm.heads.size(); ++d) s.lm.heads[d].save(ts, sense_head_prefix(d));
  // A sharded table's rows, gathered in rank order (the shards are contiguous) on the host.
  std::unordered_set<const TensorImpl*> part;
  for (SenseHead& h : s.lm.heads)
    if (!h.table.stores_all())
      for (const Tensor* t : {&h.table.W, &h.table.b, &h.table.centers, &s.opt.accumulator(h.table.W),
                              &s.opt.accumulator(h.table.b)})
        part.insert(t->impl());
  for (auto& [name, t] : ts)
    if (part.count(t.impl())) t = dist::allgather_rows(t.to(Device::cpu()));
  if (!write) return;
  save_safetensors(path, ts,
                   {{"step", s.step}, {"dropout_offset", s.dropout.offset}, {"seed", s.seed},
                    {"pca_fitted", s.lm.sense() && s.lm.heads[0].proj.fitted()}, {"vocab_checksum", s.vocab_checksum},
                    {"ranks", s.ranks}});
}

void restore_checkpoint(const std::string& path, TrainingState& s) {
  SafetensorsFile f = load_safetensors(path);
  // Older checkpoints record no checksum.
  if (f.meta<uint64_t>("vocab_checksum", s.vocab_checksum) != s.vocab_checksum)
    throw VocabularyMismatch(fmt::format("the vocabulary differs from the one {} was trained with", path));
  // The global batch, the data stream and the carried state are split by rank: another count
  // would continue a different run.
  if (const int saved = f.meta<int>("ranks", 1); saved != s.ranks)
    fail("{}: written by a run of {} data-parallel rank{}; resume it with {} (this run has {})", path, saved,
         saved == 1 ? "" : "s", saved == 1 ? "one process (no mpirun)" : fmt::format("mpirun -np {}", saved), s.ranks);
  restore_model(f, path, s.lm);
  for (NamedTensor& nt : s.lm.named()) take_param(f, path, adagrad_name(nt.name), s.lm.heads, *nt.tensor, s.opt.accumulator(*nt.tensor));
  for (int d = 0; d < 2; ++d)
    for (size_t l = 0; l < s.carried.dir[d].size(); ++l) {
      take_tensor(f, path, carried_name(d, l, "c"), s.carried.dir[d][l].c);
      take_tensor(f, path, carried_name(d, l, "m"), s.carried.dir[d][l].m);
    }
  s.step = f.meta<int64_t>("step");
  s.dropout.offset = f.meta<uint64_t>("dropout_offset");
}

void check_checkpoint_metadata(const SafetensorsFile& f) {
  f.meta<int64_t>("step");
  f.meta<uint64_t>("dropout_offset");
  f.meta<uint64_t>("seed", 0);
  f.meta<bool>("pca_fitted", false);
  f.meta<uint64_t>("vocab_checksum", 0);
  f.meta<int>("ranks", 1);
}

int64_t restore_model(const std::string& path, ElmoLM& lm) {
  SafetensorsFile f = load_safetensors(path);
  restore_model(f, path, lm);
  return f.meta<int64_t>("step", 0);
}

}  // namespace sa
