// Runs an OpCase on a device and dtype: outputs, and the gradient of a random weighted sum of the
// outputs with respect to each differentiable input (row-sparse gradients made dense).
#pragma once
#include "tests/op_cases.h"

namespace sa::testing {

struct CaseRun {
  std::vector<Tensor> outputs;
  std::vector<Tensor> grads;  // one per input; undefined for non-differentiable inputs
};

inline std::vector<Tensor> place(const std::vector<CaseInput>& inputs, DType dtype, Device dev, bool with_grad) {
  std::vector<Tensor> xs;
  for (const CaseInput& ci : inputs) {
    Tensor t = ci.value;
    if (is_float(t.dtype())) t = t.to(dtype);
    t = t.to(dev);
    if (t.same(ci.value)) t = t.clone();  // never alias the case's own tensor
    if (with_grad && ci.differentiable) t.set_requires_grad();
    if (ci.sparse) t.set_sparse_grad();
    xs.push_back(t);
  }
  return xs;
}

// Weights for the loss sum_i <out_i, w_i>, drawn once per case from the output shapes.
inline std::vector<Tensor> loss_weights(const OpCase& c, const std::vector<CaseInput>& inputs, std::mt19937_64& rng) {
  NoGrad ng;
  std::vector<Tensor> outs = c.run(place(inputs, DType::F64, Device::cpu(), false));
  std::vector<Tensor> ws;
  std::uniform_real_distribution<double> u(-1, 1);
  for (const Tensor& o : outs) {
    std::vector<double> v(static_cast<size_t>(o.numel()));
    for (double& x : v) x = u(rng);
    ws.push_back(Tensor::from(v, o.shape()));
  }
  return ws;
}

inline Tensor weighted_loss(const std::vector<Tensor>& outs, const std::vector<Tensor>& ws) {
  Tensor loss;
  for (size_t i = 0; i < outs.size(); ++i) {
    Tensor w = ws[i].to(outs[i].dtype()).to(outs[i].device());
    Tensor term = ops::sum(ops::mul(outs[i], w));
    loss = loss.defined() ? ops::add(loss, term) : term;
  }
  return loss;
}

inline CaseRun run_case(const OpCase& c, const std::vector<CaseInput>& inputs, const std::vector<Tensor>& ws,
                        DType dtype, Device dev) {
  std::vector<Tensor> xs = place(inputs, dtype, dev, true);
  CaseRun r;
  r.outputs = c.run(xs);
  backward(weighted_loss(r.outputs, ws));
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!inputs[i].differentiable) {
      r.grads.emplace_back();
    } else if (inputs[i].sparse) {
      r.grads.push_back(xs[i].sparse_grad().to_dense(xs[i].dim(0), xs[i].dim(1)));
    } else {
      Tensor g = xs[i].grad();
      r.grads.push_back(g.defined() ? g : Tensor::zeros(xs[i].shape(), xs[i].dtype(), xs[i].device()));
    }
  }
  return r;
}

}  // namespace sa::testing
