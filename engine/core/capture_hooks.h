// What a step captured for replay (engine/step_replay.h) must also keep of the CPU's work outside
// the backend's primitives: the tensors made from host values (the step's inputs) and host copies
// between tensors. Called by engine/core/tensor.cpp; do nothing unless a capture is open.
#pragma once

namespace sa {
class Tensor;

namespace capture_hooks {
void uploaded(const Tensor& t);                       // t was just filled from host values
void copied(const Tensor& src, const Tensor& dst);    // dst was just filled from src on the CPU
}  // namespace capture_hooks

}  // namespace sa
