#include "sense/projection.h"

#include <cmath>
#include <random>

#include "engine/cpu/lapack.h"

namespace sa {

PcaProjection::PcaProjection(int dim, int k, int queue_size, uint64_t seed) : dim_(dim), k_(k), cap_(queue_size) {
  SA_CHECK(dim > 0 && k > 0 && k <= dim && queue_size > 0, "projection: need 0 < k ({}) <= dim ({}) and a queue ({})", k,
           dim, queue_size);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<float> v(static_cast<size_t>(dim) * k);
  for (float& x : v) x = static_cast<float>(n(rng));
  P_ = Tensor::from(v, {dim, k});
  mean_ = Tensor::zeros({1, dim});
}

void PcaProjection::push(const Tensor& vectors, int64_t step) {
  SA_CHECK(vectors.rank() == 2 && vectors.dim(1) == dim_, "projection: vectors {} must be [n, {}]", describe(vectors),
           dim_);
  pending_.emplace_back(vectors, step);
  pending_rows_ += vectors.dim(0);
  // A push that newer pushes will have pushed out of the queue is never read.
  while (pending_.size() > 1 && pending_rows_ - pending_.front().first.dim(0) >= cap_)
    pending_rows_ -= pending_.front().first.dim(0), pending_.pop_front();
}

void PcaProjection::take_pending() const {
  if (pending_.empty()) return;
  NoGrad ng;
  std::vector<Tensor> parts;
  for (const auto& [t, step] : pending_) parts.push_back(t.to(pending_.front().first.device()));
  // Read as f32, the queue's type: up to 20,000 x 512 values a refit, which as doubles took 50 ms.
  const Tensor all = (parts.size() == 1 ? parts[0] : ops::concat(parts, 0)).to(DType::F32).to_host();
  const float* v = all.data<float>();
  size_t at = 0;
  for (const auto& [t, step] : pending_)
    for (int64_t r = 0; r < t.dim(0); ++r, at += static_cast<size_t>(dim_)) {
      queue_.emplace_back(v + at, v + at + dim_);
      steps_.push_back(step);
      if (static_cast<int>(queue_.size()) > cap_) queue_.pop_front(), steps_.pop_front();
    }
  pending_.clear(), pending_rows_ = 0;
}

void PcaProjection::drop_before(int64_t first) {
  take_pending();
  while (!steps_.empty() && steps_.front() < first) queue_.pop_front(), steps_.pop_front();
}

void PcaProjection::refit() {
  take_pending();
  const int n = static_cast<int>(queue_.size()), d = dim_;
  SA_CHECK(n >= 2, "projection: {} queued vectors; at least 2 are needed for a fit", n);
  // LAPACK's dsyevr may never return on a matrix holding a NaN (its bisection widens a bracket
  // that never closes), and a refit runs at step 1: one non-finite context vector would hang the run
  // without a word. Refuse it with a message instead.
  int64_t bad = 0;
  for (const auto& x : queue_)
    for (float e : x) bad += !std::isfinite(e);
  SA_CHECK(bad == 0,
           "projection: {} of the {} queued context values are not finite (NaN or inf); the model's outputs "
           "diverged, or a kernel wrote none into them",
           bad, int64_t{n} * d);
  std::vector<double> mean(static_cast<size_t>(d), 0.0), cov(static_cast<size_t>(d) * d, 0.0);
  for (const auto& x : queue_)
    for (int i = 0; i < d; ++i) mean[i] += x[i];
  for (double& m : mean) m /= n;
  // The sum of c c^T over the centered samples through BLAS, a block of them at a time: at 20,000
  // samples of 512 this is 2.6G multiply-adds a refit (pca_every steps, each direction), which a
  // loop of our own took 0.3 s for. The block, column-major [d, rows], gives the upper triangle.
  constexpr int kBlock = 1024;
  std::vector<double> block(static_cast<size_t>(kBlock) * d);
  int rows = 0;
  auto add_block = [&] {
    const double one = 1;
    if (rows > 0) dsyrk_("U", "N", &d, &rows, &one, block.data(), &d, &one, cov.data(), &d);
    rows = 0;
  };
  for (const auto& x : queue_) {
    double* c = &block[static_cast<size_t>(rows) * d];
    for (int i = 0; i < d; ++i) c[i] = x[i] - mean[i];
    if (++rows == kBlock) add_block();
  }
  add_block();
  // Column-major upper triangle: element (i, j), i <= j, at cov[j * d + i]. Both halves, scaled.
  for (int j = 0; j < d; ++j)
    for (int i = 0; i <= j; ++i) cov[static_cast<size_t>(i) * d + j] = cov[static_cast<size_t>(j) * d + i] /= (n - 1);
  for (double e : cov) SA_CHECK(std::isfinite(e), "projection: the contexts' covariance overflows (a value of {})", e);
  // The k largest eigenpairs: indices d-k+1 .. d in LAPACK's ascending order.
  const int il = d - k_ + 1, iu = d, lda = d, ldz = d;
  const double abstol = 0, vl = 0, vu = 0;
  int m = 0, info = 0, lwork = -1, liwork = -1, iwq = 0;
  double wq = 0;
  std::vector<double> w(static_cast<size_t>(d)), z(static_cast<size_t>(d) * k_);
  std::vector<int> isuppz(static_cast<size_t>(2 * k_));
  dsyevr_("V", "I", "U", &d, cov.data(), &lda, &vl, &vu, &il, &iu, &abstol, &m, w.data(), z.data(), &ldz,
          isuppz.data(), &wq, &lwork, &iwq, &liwork, &info);
  lwork = static_cast<int>(wq);
  liwork = iwq;
  std::vector<double> work(static_cast<size_t>(lwork));
  std::vector<int> iwork(static_cast<size_t>(liwork));
  dsyevr_("V", "I", "U", &d, cov.data(), &lda, &vl, &vu, &il, &iu, &abstol, &m, w.data(), z.data(), &ldz,
          isuppz.data(), work.data(), &lwork, iwork.data(), &liwork, &info);
  SA_CHECK(info == 0 && m == k_, "projection: LAPACK dsyevr failed (info {}, {} of {} eigenpairs)", info, m, k_);
  // z holds eigenvector j (ascending eigenvalue) in column j (column-major): P[:, c] = z[:, k-1-c].
  std::vector<float> p(static_cast<size_t>(d) * k_);
  variance_.assign(static_cast<size_t>(k_), 0.0);
  for (int col = 0; col < k_; ++col) {
    const int j = k_ - 1 - col;
    variance_[col] = w[j];
    for (int i = 0; i < d; ++i) p[static_cast<size_t>(i) * k_ + col] = static_cast<float>(z[static_cast<size_t>(j) * d + i]);
  }
  P_ = Tensor::from(p, {d, k_});
  mean_ = Tensor::of(mean, {1, d}, DType::F32);
  fitted_ = true;
}

Tensor PcaProjection::queue_tensor() const {
  take_pending();
  std::vector<float> v;
  v.reserve(queue_.size() * static_cast<size_t>(dim_));
  for (const auto& x : queue_) v.insert(v.end(), x.begin(), x.end());
  return Tensor::from(v, {static_cast<int64_t>(queue_.size()), dim_});
}

Tensor PcaProjection::queue_steps_tensor() const {
  take_pending();
  return Tensor::of(std::vector<double>(steps_.begin(), steps_.end()), {static_cast<int64_t>(steps_.size())}, DType::F64);
}

void PcaProjection::restore(const Tensor& queue, const Tensor& steps, const Tensor& saved_mean, const Tensor& matrix,
                            bool fitted) {
  SA_CHECK(matrix.shape() == P_.shape(), "projection: restored matrix {} must be {}", describe(matrix),
           to_string(P_.shape()));
  SA_CHECK(!steps.defined() || (steps.rank() == 1 && steps.dim(0) == queue.dim(0)),
           "projection: {} queue steps for {} queued vectors", steps.defined() ? steps.numel() : 0, queue.dim(0));
  queue_.clear(), steps_.clear(), pending_.clear(), pending_rows_ = 0;
  push(queue);
  take_pending();
  if (steps.defined()) {
    const std::vector<double> s = steps.values();  // the newest rows, when the queue is now smaller
    steps_.assign(s.end() - static_cast<std::ptrdiff_t>(queue_.size()), s.end());
  }
  P_ = matrix.to(Device::cpu()).to(DType::F32).clone();
  fitted_ = fitted;
  if (saved_mean.defined()) {
    SA_CHECK(saved_mean.shape() == mean_.shape(), "projection: restored mean {} must be {}", describe(saved_mean),
             to_string(mean_.shape()));
    mean_ = saved_mean.to(Device::cpu()).to(DType::F32).clone();
    return;
  }
  // Checkpoints from before the mean was saved pushed and refitted together: the queue's mean is
  // the mean of the last fit.
  std::vector<double> m(static_cast<size_t>(dim_), 0.0);
  for (const auto& x : queue_)
    for (int i = 0; i < dim_; ++i) m[i] += x[i] / static_cast<double>(queue_.size());
  mean_ = fitted && !queue_.empty() ? Tensor::of(m, {1, dim_}) : Tensor::zeros({1, dim_});
}

}  // namespace sa
