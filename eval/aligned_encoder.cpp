#include "eval/aligned_encoder.h"

#include "eval/alignment.h"

namespace sa {

std::vector<Tensor> read_layer_maps(const std::string& pattern, int n_layers, int64_t dim, Device dev) {
  std::vector<Tensor> maps;
  for (int l = 0; l < n_layers; ++l) {
    std::string path = pattern;
    if (size_t at = path.find("{layer}"); at != std::string::npos) path.replace(at, 7, std::to_string(l));
    Matrix W = read_map(path);
    SA_CHECK(W.rows == dim && W.cols == W.rows, "{}: the map is [{}, {}], the model's vectors have {} dimensions", path,
             W.rows, W.cols, dim);
    maps.push_back(Tensor::from(W.v, {W.rows, W.cols}).to(DType::F32).to(dev));
  }
  return maps;
}

Tensor apply_alignment(const Tensor& e, const std::vector<Tensor>& maps) {
  NoGrad ng;
  std::vector<Tensor> out;
  for (int64_t l = 0; l < e.dim(0); ++l)
    out.push_back(ops::reshape(ops::matmul(ops::reshape(ops::slice(e, 0, l, l + 1), {e.dim(1), e.dim(2)}), maps[l]),
                               {1, e.dim(1), e.dim(2)}));
  return ops::concat(out, 0);
}

AlignedEncoder::AlignedEncoder(std::shared_ptr<const ContextualEncoder> inner, std::vector<Tensor> maps)
    : inner_(std::move(inner)), maps_(std::move(maps)) {
  lowercase = inner_->lowercase;
  origin = inner_->origin;
}

std::vector<Tensor> AlignedEncoder::embed(const Sentences& batch, EncoderState* state) const {
  std::vector<Tensor> out = inner_->embed(batch, state);
  for (Tensor& e : out) e = apply_alignment(e, maps_);
  return out;
}

}  // namespace sa
