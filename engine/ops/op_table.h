// The one table of differentiable ops. Tape nodes are recorded only under names from here
// (record(Op::name, ...) in op_util.h), and the gradient-check coverage test walks it, so an op is
// not done until tests/op_cases.cpp has a case for it. It lists every differentiable op of ops.h,
// also those built from others (linear, transpose, split, lstm_sequences), and the name the cuDNN
// path records under (lstm_sequence_cudnn).
#pragma once
#include <array>
#include <cstddef>

#define SA_DIFFERENTIABLE_OPS(X)                                                                          \
  X(matmul) X(bmm) X(linear)                                                                              \
  X(add) X(sub) X(mul) X(div) X(scale) X(add_scalar)                                                      \
  X(relu) X(sigmoid) X(tanh) X(gelu) X(gelu_erf) X(exp) X(log) X(neg) X(sqrt) X(square) X(clip) X(cast)              \
  X(masked_fill) X(dropout)                                                                               \
  X(softmax) X(log_softmax) X(logsumexp) X(cross_entropy) X(soft_cross_entropy)                           \
  X(gather_rows) X(scatter_add_rows) X(conv1d_max)                                                        \
  X(reshape) X(permute) X(transpose) X(slice) X(concat) X(split) X(unbind)                                \
  X(sum) X(mean) X(max)                                                                                   \
  X(layer_norm) X(lstm_cell) X(lstm_sequence) X(lstm_sequence_cudnn) X(lstm_sequences) X(highway)         \
  X(candidate_softmax) X(select_candidate_softmax) X(crf_nll) X(attention)

namespace sa::ops {

#define SA_OP_ENUMERATOR(name) name,
enum class Op { SA_DIFFERENTIABLE_OPS(SA_OP_ENUMERATOR) };
#undef SA_OP_ENUMERATOR

#define SA_OP_NAME(name) #name,
inline constexpr std::array kOpNames = {SA_DIFFERENTIABLE_OPS(SA_OP_NAME)};
#undef SA_OP_NAME

constexpr const char* op_name(Op op) { return kOpNames[static_cast<size_t>(op)]; }

}  // namespace sa::ops
