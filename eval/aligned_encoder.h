// The +Proj systems: an encoder whose every layer goes through a linear map from `bin/align fit`
// (one map for all layers, or one per layer when the file name holds "{layer}"). bin/embed and
// bin/xling_eval take it through --align; xling_eval maps only the non-English languages, into
// English's space.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "layers/encoder.h"

namespace sa {

// The maps for each of n_layers layers, each [dim, dim] f32 on dev; "{layer}" in `pattern` is
// replaced by the layer index. Fails naming the file when a map has another size.
std::vector<Tensor> read_layer_maps(const std::string& pattern, int n_layers, int64_t dim, Device dev);
// Each layer l of e [n_layers, n, dim] times maps[l].
Tensor apply_alignment(const Tensor& e, const std::vector<Tensor>& maps);

class AlignedEncoder : public ContextualEncoder {
 public:
  AlignedEncoder(std::shared_ptr<const ContextualEncoder> inner, std::vector<Tensor> maps);
  std::vector<Tensor> embed(const Sentences& batch, EncoderState* state = nullptr) const override;
  std::unique_ptr<EncoderState> new_state(int max_batch) const override { return inner_->new_state(max_batch); }
  int n_layers() const override { return inner_->n_layers(); }
  int64_t dim() const override { return inner_->dim(); }
  Device device() const override { return inner_->device(); }
  bool reads_segmented_words() const override { return inner_->reads_segmented_words(); }

 private:
  std::shared_ptr<const ContextualEncoder> inner_;
  std::vector<Tensor> maps_;
};

}  // namespace sa
