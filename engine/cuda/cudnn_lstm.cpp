// cuDNN's LSTM with projection for ops::lstm_sequences (see engine/ops/cudnn_lstm.h). Our weights
// stay the source of truth: every forward packs them into cuDNN's weight space (a transpose per
// gate, cheap next to the T recurrent steps), every backward unpacks the weight gradients into our
// layout. cuDNN's headers are slow to compile: this is the engine's one translation unit with them.
#include "engine/ops/cudnn_lstm.h"

#include <cuda_runtime.h>
#include <cudnn.h>

#include <array>
#include <map>
#include <mutex>

#include "engine/backend.h"
#include "engine/core/autograd.h"
#include "engine/core/error.h"
#include "engine/cuda/host_meeting.h"

#define CUDNN_CHECK(call)                                                                                     \
  do {                                                                                                        \
    cudnnStatus_t s_ = (call);                                                                                \
    if (s_ != CUDNN_STATUS_SUCCESS) ::sa::fail("cuDNN error: {} in {} at {}:{}", cudnnGetErrorString(s_), #call, \
                                               __FILE__, __LINE__);                                           \
  } while (0)

#define CUDA_OK(call)                                                                                     \
  do {                                                                                                    \
    cudaError_t e_ = (call);                                                                              \
    if (e_ != cudaSuccess) ::sa::fail("CUDA error: {} in {} at {}:{}", cudaGetErrorString(e_), #call, __FILE__, \
                                      __LINE__);                                                          \
  } while (0)

namespace sa::cudnn_lstm {

namespace {

// One cuDNN handle per device (set to the calling thread's stream of the backend at each call), and the
// dropout descriptor cuDNN's RNN wants even for one layer (where it applies no dropout). Both live
// until the process ends.
struct Context {
  cudnnHandle_t handle = nullptr;
  cudnnDropoutDescriptor_t dropout = nullptr;
};

Context& context(int device) {
  static std::mutex mu;
  static std::map<int, Context> contexts;
  std::lock_guard<std::mutex> lock(mu);
  auto it = contexts.find(device);
  if (it != contexts.end()) return it->second;
  const cuda::HostMeeting meeting;  // the handle's setup launches on a stream of its own
  Context c;
  CUDNN_CHECK(cudnnCreate(&c.handle));
  CUDNN_CHECK(cudnnCreateDropoutDescriptor(&c.dropout));
  size_t bytes = 0;
  CUDNN_CHECK(cudnnDropoutGetStatesSize(c.handle, &bytes));
  void* states = nullptr;
  CUDA_OK(cudaMalloc(&states, bytes));
  CUDNN_CHECK(cudnnSetDropoutDescriptor(c.dropout, c.handle, 0.0f, states, bytes, 0));
  return contexts.emplace(device, c).first->second;
}

cudnnDataType_t data_type(DType t) {
  if (t == DType::F32) return CUDNN_DATA_FLOAT;
  if (t == DType::F64) return CUDNN_DATA_DOUBLE;
  fail("lstm (cuDNN): dtype {} not supported (f32 or f64)", dtype_name(t));
}

// A matrix or bias inside the weight space: offset in elements, and its extent.
struct Region {
  int64_t offset = 0, rows = 0, cols = 0;
};

Tensor view(const Tensor& space, const Region& r) {
  return space.rows(r.offset, r.offset + r.rows * r.cols).view({r.rows, r.cols});
}

// cuDNN's gate order (linear layers 0-3 on the input, 4-7 on the recurrent state) is i, f, g, o;
// ours (TF) is i, j, f, o with j = g. The map is its own inverse.
constexpr std::array<int, 4> kOtherGate = {0, 2, 1, 3};

}  // namespace

struct Saved {
  ops::LstmSequenceArgs a;
  int64_t T = 0, B = 0, in = 0, D = 0, P = 0;
  DType dtype = DType::F32;
  cudnnHandle_t handle = nullptr;
  cudnnRNNDescriptor_t rnn = nullptr;
  cudnnRNNDataDescriptor_t xd = nullptr, yd = nullptr;
  cudnnTensorDescriptor_t hd = nullptr, cd = nullptr;
  size_t weight_bytes = 0, work_bytes = 0, reserve_bytes = 0;
  Tensor weights, reserve, lengths, y;  // weight space (dtype), reserve (bytes), i32 [B] on the device
  std::array<Region, 9> matrix;         // linear layers 0-7, then the projection (8)
  std::array<Region, 4> bias;           // the input biases of layers 0-3 (single input bias)

  ~Saved() {
    if (rnn) cudnnDestroyRNNDescriptor(rnn);
    if (xd) cudnnDestroyRNNDataDescriptor(xd);
    if (yd) cudnnDestroyRNNDataDescriptor(yd);
    if (hd) cudnnDestroyTensorDescriptor(hd);
    if (cd) cudnnDestroyTensorDescriptor(cd);
  }

  Tensor workspace() const { return Tensor::empty({static_cast<int64_t>(std::max<size_t>(work_bytes, 1))}, DType::U8, a.x.device()); }
};

namespace {

void describe_state(cudnnTensorDescriptor_t* d, cudnnDataType_t dt, int64_t B, int64_t n) {
  CUDNN_CHECK(cudnnCreateTensorDescriptor(d));
  const int dims[3] = {1, static_cast<int>(B), static_cast<int>(n)};
  const int strides[3] = {static_cast<int>(B * n), static_cast<int>(n), 1};
  CUDNN_CHECK(cudnnSetTensorNdDescriptor(*d, dt, 3, dims, strides));
}

void describe_sequence(cudnnRNNDataDescriptor_t* d, cudnnDataType_t dt, int64_t T, int64_t B, int64_t n) {
  CUDNN_CHECK(cudnnCreateRNNDataDescriptor(d));
  std::vector<int> lengths(static_cast<size_t>(B), static_cast<int>(T));
  CUDNN_CHECK(cudnnSetRNNDataDescriptor(*d, dt, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, static_cast<int>(T),
                                        static_cast<int>(B), static_cast<int>(n), lengths.data(), nullptr));
}

// Where cuDNN keeps linear layer `id`'s matrix (and bias) in the weight space; checks the extents
// against what our layout needs, so a different convention fails loudly instead of silently.
void locate(Saved& s, int id, int64_t rows, int64_t cols) {
  cudnnTensorDescriptor_t md, bd;
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&md));
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&bd));
  void *maddr = nullptr, *baddr = nullptr;
  CUDNN_CHECK(cudnnGetRNNWeightParams(s.handle, s.rnn, 0, s.weight_bytes, s.weights.raw(), id, md, &maddr, bd, &baddr));
  // A matrix must be rows x cols as cuDNN reports it (its last two extents); a bias only needs its length.
  auto region = [&](cudnnTensorDescriptor_t d, void* addr, int64_t want_rows, int64_t want_cols, const char* what) {
    cudnnDataType_t dt;
    int nb = 0, dims[8], strides[8];
    CUDNN_CHECK(cudnnGetTensorNdDescriptor(d, 8, &dt, &nb, dims, strides));
    int64_t n = 1;
    for (int k = 0; k < nb; ++k) n *= dims[k];
    const int64_t r = nb >= 2 ? dims[nb - 2] : 1, c = dims[nb - 1];
    const bool shaped = want_cols == 1 || (r == want_rows && c == want_cols);
    SA_CHECK(addr && n == want_rows * want_cols && shaped,
             "lstm (cuDNN): linear layer {} {} is {}x{} ({} values), expected {}x{}", id, what, r, c, n, want_rows,
             want_cols);
    const ptrdiff_t bytes = static_cast<char*>(addr) - static_cast<char*>(s.weights.raw());
    const auto elt = static_cast<ptrdiff_t>(dtype_size(s.dtype));
    SA_CHECK(bytes >= 0 && bytes % elt == 0, "lstm (cuDNN): misaligned weight {} of layer {}", what, id);
    return Region{bytes / elt, want_rows, want_cols};
  };
  s.matrix[static_cast<size_t>(id)] = region(md, maddr, rows, cols, "matrix");
  if (id < 4) s.bias[static_cast<size_t>(id)] = region(bd, baddr, rows, 1, "bias");
  cudnnDestroyTensorDescriptor(md);
  cudnnDestroyTensorDescriptor(bd);
}

// Our W [in + P, 4D] (TF columns i, j, f, o), bias [4D] and W_P [D, P] into cuDNN's matrices:
// W_gate [D, in], R_gate [D, P] (row-major, out x in), the input biases [D] with TF's forget bias
// +1 folded in, and the projection [P, D].
void pack(const Saved& s) {
  NoGrad ng;
  const int64_t in = s.in, D = s.D, P = s.P;
  const Tensor bias = s.a.bias.view({4 * D});
  for (int id = 0; id < 8; ++id) {
    const int k = kOtherGate[static_cast<size_t>(id % 4)];
    const Tensor gate = ops::slice(s.a.W, 1, k * D, (k + 1) * D);  // [in + P, D]
    const Tensor part = id < 4 ? gate.rows(0, in) : gate.rows(in, in + P);
    Tensor dst = view(s.weights, s.matrix[static_cast<size_t>(id)]);
    dst.copy_from(ops::transpose(part, 0, 1));
    if (id >= 4) continue;
    Tensor b = ops::slice(bias, 0, k * D, (k + 1) * D);
    if (k == 2) b = ops::add_scalar(b, 1.0);  // TF's forget bias, added at run time
    Tensor bdst = view(s.weights, s.bias[static_cast<size_t>(id)]).view({D});
    bdst.copy_from(b);
  }
  Tensor proj = view(s.weights, s.matrix[8]);
  proj.copy_from(ops::transpose(s.a.W_P, 0, 1));
}

}  // namespace

Forward forward(const ops::LstmSequenceArgs& a) {
  const Tensor& x = a.x;
  const Device dev = x.device();
  SA_CHECK(dev.is_cuda() && x.rank() == 3 && a.W_P.rank() == 2, "lstm (cuDNN): x {} on {}, W_P {}", describe(x),
           dev.str(), describe(a.W_P));
  auto s = std::make_shared<Saved>();
  s->a = a;
  s->T = x.dim(0), s->B = x.dim(1), s->in = x.dim(2), s->D = a.W_P.dim(0), s->P = a.W_P.dim(1);
  s->dtype = x.dtype();
  const int64_t T = s->T, B = s->B, in = s->in, D = s->D, P = s->P;
  SA_CHECK(P < D && a.W.shape() == (Shape{in + P, 4 * D}) && a.bias.numel() == 4 * D &&
               a.c0.shape() == (Shape{B, D}) && a.m0.shape() == (Shape{B, P}),
           "lstm (cuDNN): W {}, bias {}, W_P {}, c0 {}, m0 {} for x {} (and a projection smaller than the cell)",
           describe(a.W), describe(a.bias), describe(a.W_P), describe(a.c0), describe(a.m0), describe(x));
  sa::backend_uncounted(dev);  // binds the thread to the device (and records it, engine/cuda/cuda_device.cu)
  const Context& c = context(dev.index);
  s->handle = c.handle;
  CUDNN_CHECK(cudnnSetStream(s->handle, static_cast<cudaStream_t>(cuda::stream_of(dev.index))));
  const cudnnDataType_t dt = data_type(s->dtype);
  CUDNN_CHECK(cudnnCreateRNNDescriptor(&s->rnn));
  // f32 with FMA math: no TF32, so results stay comparable with the CPU and the step path.
  const cudnnMathType_t math = s->dtype == DType::F32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
  CUDNN_CHECK(cudnnSetRNNDescriptor_v8(s->rnn, CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, CUDNN_RNN_SINGLE_INP_BIAS,
                                       CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, dt, dt, math,
                                       static_cast<int32_t>(in), static_cast<int32_t>(D), static_cast<int32_t>(P), 1,
                                       c.dropout, CUDNN_RNN_PADDED_IO_DISABLED));
  SA_CHECK(a.cell_clip <= 0 && a.proj_clip <= 0, "lstm (cuDNN): no clips (cell_clip {}, proj_clip {})", a.cell_clip,
           a.proj_clip);
  describe_sequence(&s->xd, dt, T, B, in);
  describe_sequence(&s->yd, dt, T, B, P);
  describe_state(&s->hd, dt, B, P);
  describe_state(&s->cd, dt, B, D);
  s->lengths = Tensor::full({B}, static_cast<double>(T), DType::I32, dev);  // filled there: no upload a step replay would refill

  CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(s->handle, s->rnn, &s->weight_bytes));
  const size_t elt = dtype_size(s->dtype);
  SA_CHECK(s->weight_bytes % elt == 0, "lstm (cuDNN): weight space of {} bytes", s->weight_bytes);
  s->weights = Tensor::zeros({static_cast<int64_t>(s->weight_bytes / elt)}, s->dtype, dev);
  for (int id = 0; id < 8; ++id) locate(*s, id, D, id < 4 ? in : P);
  locate(*s, 8, P, D);
  pack(*s);

  CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(s->handle, s->rnn, CUDNN_FWD_MODE_TRAINING, s->xd, &s->work_bytes,
                                        &s->reserve_bytes));
  s->reserve = Tensor::empty({static_cast<int64_t>(std::max<size_t>(s->reserve_bytes, 1))}, DType::U8, dev);
  Tensor work = s->workspace();
  Forward f;
  f.y = Tensor::empty({T, B, P}, s->dtype, dev);
  f.c_last = Tensor::empty({B, D}, s->dtype, dev);
  f.m_last = Tensor::empty({B, P}, s->dtype, dev);
  CUDNN_CHECK(cudnnRNNForward(s->handle, s->rnn, CUDNN_FWD_MODE_TRAINING, s->lengths.data<int32_t>(), s->xd, x.raw(),
                              s->yd, f.y.raw(), s->hd, a.m0.raw(), f.m_last.raw(), s->cd, a.c0.raw(), f.c_last.raw(),
                              s->weight_bytes, s->weights.raw(), s->work_bytes, work.raw(), s->reserve_bytes,
                              s->reserve.raw()));
  s->y = f.y;
  f.saved = s;
  return f;
}

Grads backward(const Saved& s, const Tensor& gy, const Tensor& gc_last, const Tensor& gm_last) {
  NoGrad ng;
  const Device dev = s.a.x.device();
  sa::backend_uncounted(dev);  // binds the thread to the device (and records it, engine/cuda/cuda_device.cu)
  CUDNN_CHECK(cudnnSetStream(s.handle, static_cast<cudaStream_t>(cuda::stream_of(dev.index))));
  const int64_t T = s.T, B = s.B, in = s.in, D = s.D, P = s.P;
  const Tensor dy = gy.defined() ? gy : Tensor::zeros({T, B, P}, s.dtype, dev);
  const Tensor dhy = gm_last.defined() ? gm_last : Tensor::zeros({B, P}, s.dtype, dev);
  const Tensor dcy = gc_last.defined() ? gc_last : Tensor::zeros({B, D}, s.dtype, dev);
  Grads g;
  g.x = Tensor::empty({T, B, in}, s.dtype, dev);
  g.m0 = Tensor::empty({B, P}, s.dtype, dev);
  g.c0 = Tensor::empty({B, D}, s.dtype, dev);
  Tensor work = s.workspace();
  // Backward data first: it fills the reserve space that backward weights reads.
  CUDNN_CHECK(cudnnRNNBackwardData_v8(s.handle, s.rnn, s.lengths.data<int32_t>(), s.yd, s.y.raw(), dy.raw(), s.xd,
                                      g.x.raw(), s.hd, s.a.m0.raw(), dhy.raw(), g.m0.raw(), s.cd, s.a.c0.raw(),
                                      dcy.raw(), g.c0.raw(), s.weight_bytes, s.weights.raw(), s.work_bytes, work.raw(),
                                      s.reserve_bytes, s.reserve.raw()));
  Tensor dw = Tensor::zeros(s.weights.shape(), s.dtype, dev);
  CUDNN_CHECK(cudnnRNNBackwardWeights_v8(s.handle, s.rnn, CUDNN_WGRAD_MODE_ADD, s.lengths.data<int32_t>(), s.xd,
                                         s.a.x.raw(), s.hd, s.a.m0.raw(), s.yd, s.y.raw(), s.weight_bytes, dw.raw(),
                                         s.work_bytes, work.raw(), s.reserve_bytes, s.reserve.raw()));
  // Back to our layout: W's column block of TF gate k is [W_gate^T; R_gate^T] of cuDNN gate k'.
  std::vector<Tensor> columns, biases;
  for (int k = 0; k < 4; ++k) {
    const size_t id = static_cast<size_t>(kOtherGate[static_cast<size_t>(k)]);
    columns.push_back(ops::concat({ops::transpose(view(dw, s.matrix[id]), 0, 1),
                                   ops::transpose(view(dw, s.matrix[id + 4]), 0, 1)},
                                  0));
    biases.push_back(view(dw, s.bias[id]).view({D}));
  }
  g.W = ops::concat(columns, 1);
  g.bias = ops::concat(biases, 0).view(s.a.bias.shape());
  g.W_P = ops::transpose(view(dw, s.matrix[8]), 0, 1);
  return g;
}

std::string version() {
  const size_t v = cudnnGetVersion();
  return "cuDNN " + std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." +
         std::to_string(v % 100);
}

}  // namespace sa::cudnn_lstm
