// SA_DUMP_STEPS=DIR: what each step of plain ELMo training fed its loss, so that a reference
// implementation can run the very same step (eval/peers/: bilm-tf's training graph given our
// weights, batch and negatives). DIR/ckpt-0.safetensors holds the weights before the first step
// (the checkpoint schema, train/checkpoint.h); DIR/step-N.safetensors step N's inputs: each
// direction's char ids [rows, steps, 50] and targets [rows, steps], its sampled negatives and their
// shifts (-log expected count, as TensorFlow's sampled_values take them), and the loss. A SaELMo step
// adds each direction's selection vectors `ctx` [rows * steps, P], the chosen table row of each
// target `selected` and the sampled sense rows `negative_rows` (the sense head's own negatives).
// Off unless set.
#pragma once
#include <cstdint>
#include <string>

#include "data/lm_batches.h"
#include "engine/engine.h"
#include "layers/softmax.h"
#include "sense/sense_head.h"

namespace sa {

// The folder, or "" when SA_DUMP_STEPS is not set.
std::string step_dump_dir();
// `senses`: SaELMo's two directions' selections, or null for ELMo.
void dump_step(const std::string& dir, int64_t step, const LmBatch* batches[2], const SampledCandidates negatives[2],
               const SenseStep* senses, const Tensor& loss);

}  // namespace sa
