// The LSTM-with-projection layer through cuDNN's RNN API (cudnnRNNForward, BackwardData_v8,
// BackwardWeights_v8): the fast CUDA path of ops::lstm_sequences. cuDNN applies cell_clip and the
// projection (no projection bias, as bilm-tf) but has no proj_clip, so ops take this path only when
// proj_clip is 0 or the caller asks for it (lstm.cudnn = "on"). Declared here without CUDA
// headers so that the ops never include the CUDA side; engine/cuda/cudnn_lstm.cpp implements it,
// built only with cuDNN: callers guard every use with SA_CUDNN.
#pragma once
#include <memory>
#include <string>

#include "engine/ops/ops.h"

namespace sa::cudnn_lstm {

struct Saved;  // descriptors, packed weights, reserve space: what the backward needs

struct Forward {
  Tensor y, c_last, m_last;  // [T, B, P], [B, D], [B, P]
  std::shared_ptr<Saved> saved;
};
// One layer over x [T, B, in] from (c0, m0); the weights in our layout (TF gate order i, j, f, o,
// forget bias +1 at run time) are packed into cuDNN's weight space on every call.
Forward forward(const ops::LstmSequenceArgs& a);

struct Grads {
  Tensor x, W, bias, W_P, c0, m0;  // shaped as the inputs
};
// gy [T, B, P] (or undefined), gc_last [B, D] and gm_last [B, P] (each may be undefined).
Grads backward(const Saved& s, const Tensor& gy, const Tensor& gc_last, const Tensor& gm_last);

// The cuDNN library loaded at run time, as "cuDNN 9.1.0" (for the device description).
std::string version();

}  // namespace sa::cudnn_lstm
