// The CUDA backend: cuBLAS GEMMs and hand-written kernels, on one device and one stream.
// Included only by engine/cuda/*.cu.
#pragma once
#include "engine/cuda/cuda_common.cuh"

namespace sa {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device);
  Device device() const override { return Device::cuda(device_); }
  CachingAllocator& allocator() override { return alloc_; }
  void synchronize() override;
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t blas() const { return blas_; }

  void fill(Tensor& t, double value) override;
  void copy_strided(const Tensor& src, Tensor& dst, const CopyPlan& plan) override;
  void cast(const Tensor& src, Tensor& dst) override;
  void gemm(const GemmArgs& g, const Tensor& a, const Tensor& b, Tensor& c) override;
  void unary(UnaryOp op, const Tensor& x, Tensor& y, double p0, double p1) override;
  void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& gy, Tensor& gx, double p0,
                      double p1, bool accumulate) override;
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out, const BroadcastPlan& p) override;
  void sum_to(const Tensor& g, Tensor& out, const BroadcastPlan& p, bool accumulate) override;
  void axpy(double alpha, const Tensor& x, Tensor& y) override;
  void masked_fill(const Tensor& x, const Tensor& mask, double value, Tensor& y, const BroadcastPlan& p) override;
  void reduce(ReduceOp op, const Tensor& x, int64_t outer, int64_t n, int64_t inner, Tensor& out,
              Tensor* argmax) override;
  void reduce_max_backward(const Tensor& gy, const Tensor& argmax, int64_t outer, int64_t n, int64_t inner,
                           Tensor& gx) override;
  void softmax(const Tensor& x, Tensor& y, bool log) override;
  void softmax_backward(const Tensor& y, const Tensor& gy, Tensor& gx, bool log, bool accumulate) override;
  void logsumexp(const Tensor& x, Tensor& out) override;
  void cross_entropy(const Tensor& x, const Tensor& labels, Tensor& loss, Tensor& lse) override;
  void cross_entropy_backward(const Tensor& x, const Tensor& labels, const Tensor& lse, const Tensor& gloss,
                              Tensor& gx, bool accumulate) override;
  void soft_cross_entropy(const Tensor& x, const Tensor& t, Tensor& loss, Tensor& lse) override;
  void soft_cross_entropy_backward(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& gloss,
                                   Tensor& gx, bool accumulate) override;
  void gather_rows(const Tensor& table, const Tensor& idx, Tensor& out) override;
  void scatter_add_rows(const Tensor& src, const Tensor& idx, Tensor& table) override;
  void conv1d_max(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, Tensor& argmax) override;
  void conv1d_max_backward(const Tensor& x, const Tensor& w, const Tensor& argmax, const Tensor& gy, Tensor* gx,
                           Tensor* gw, Tensor* gb) override;
  void dropout_mask(uint64_t seed, uint64_t offset, double p, Tensor& mask) override;
  void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y, Tensor& mean,
                  Tensor& rstd) override;
  void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                           const Tensor& gy, Tensor* gx, Tensor* ggamma, Tensor* gbeta) override;
  void lstm_cell(const Tensor& gates, const Tensor& c_prev, double forget_bias, double cell_clip, Tensor& c,
                 Tensor& h) override;
  void lstm_cell_backward(const Tensor& gates, const Tensor& c_prev, const Tensor& c, double forget_bias,
                          double cell_clip, const Tensor* gc, const Tensor* gh, Tensor& ggates,
                          Tensor* gc_prev) override;
  void highway(const Tensor& carry, const Tensor& transform, const Tensor& x, Tensor& y) override;
  void highway_backward(const Tensor& carry, const Tensor& transform, const Tensor& x, const Tensor& gy,
                        Tensor& gcarry, Tensor& gtransform, Tensor& gx) override;
  int64_t count_nonfinite(const Tensor& x) override;
 private:
  int device_;
  CachingAllocator alloc_;
  cudaStream_t stream_ = nullptr;  // the legacy default stream: ordered with cudaMemcpy
  cublasHandle_t blas_ = nullptr;
};

}  // namespace sa
