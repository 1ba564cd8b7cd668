#include "train/step_dump.h"

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>

#include "data/safetensors.h"

namespace sa {

std::string step_dump_dir() {
  const char* d = std::getenv("SA_DUMP_STEPS");
  if (!d || !*d) return "";
  std::filesystem::create_directories(d);
  return d;
}

void dump_step(const std::string& dir, int64_t step, const LmBatch* batches[2], const SampledCandidates negatives[2],
               const SenseStep* senses, const Tensor& loss) {
  std::vector<std::pair<std::string, Tensor>> t;
  for (int d = 0; d < 2; ++d) {
    const LmBatch& b = *batches[d];
    const SampledCandidates& n = negatives[d];
    const std::string dir_name = d == 0 ? "forward" : "backward";
    t.emplace_back(dir_name + "/char_ids", Tensor::from(b.char_ids, {b.rows, b.steps, 50}));
    t.emplace_back(dir_name + "/targets", Tensor::from(b.targets, {b.rows, b.steps}));
    if (senses) {
      const SenseStep& p = senses[d];
      const std::vector<int32_t> rows = p.negatives();
      t.emplace_back(dir_name + "/ctx", p.ctx.to(Device::cpu()).to(DType::F32));
      t.emplace_back(dir_name + "/selected", p.selected.to(Device::cpu()));
      t.emplace_back(dir_name + "/negative_rows", Tensor::from(rows, {static_cast<int64_t>(rows.size())}));
      continue;
    }
    const auto count = static_cast<int64_t>(n.sampled.size());
    t.emplace_back(dir_name + "/sampled", Tensor::from(n.sampled, {count}));
    t.emplace_back(dir_name + "/sampled_shift", Tensor::of(n.sampled_shift, {count}, DType::F64));
    t.emplace_back(dir_name + "/true_shift",
                   Tensor::of(n.true_shift, {static_cast<int64_t>(n.true_shift.size())}, DType::F64));
  }
  t.emplace_back("loss", loss.to(Device::cpu()).to(DType::F64));
  save_safetensors(fmt::format("{}/step-{}.safetensors", dir, step), t, {{"step", step}});
}

}  // namespace sa
