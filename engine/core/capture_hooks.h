// What a step captured for replay (engine/step_replay.h) must also keep of the CPU's work outside
// the backend's primitives: the tensors made from host values (the step's inputs) and host copies
// between tensors. Called by engine/core/tensor.cpp; do nothing unless a capture is open.
#pragma once
#include <memory>

namespace sa {
class CachingAllocator;
class Tensor;
struct Device;

namespace capture_hooks {
// The open capture's pool, which tensors made meanwhile on its device come from (else null).
std::shared_ptr<CachingAllocator> pool(const Device& d);
void uploaded(const Tensor& t);                       // t was just filled from host values
void copied(const Tensor& src, const Tensor& dst);    // dst was just filled from src on the CPU
}  // namespace capture_hooks

}  // namespace sa
