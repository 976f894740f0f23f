// How a port value's array crosses the worker socket as one shared tensor (shm_tensor.h):
//   tokens      i32 [n]
//   samples     f32 [n]              audio PCM
//   pixels      u8  [height][width][3]  an RGB image (vision.encode@1 input)
//   embeddings  f32 [rows][n_embd]   LM input embeddings (encoder outputs)
// The text of a value travels in the message beside the descriptor. A value carries at most
// one array, so the tensor's dtype and rank say which field it fills.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/status.h"
#include "pipeline/graph/stage_inputs.h"
#include "pipeline/worker/shm_tensor.h"

namespace edge::pipeline {

struct PortTensor {
  TensorDtype dtype = TensorDtype::kF32;
  std::vector<int64_t> shape;
  std::span<const uint8_t> bytes;  // the value's own storage
};

// The array of `v` as a tensor; nullopt when it has none (text only). invalid_argument when
// it has more than one, or pixels / embeddings whose sizes disagree with their dims.
Expected<std::optional<PortTensor>> port_tensor(const PortValue& v);

// Fills the field of `v` that a tensor of this dtype and rank carries (copied out of the
// shared buffer); invalid_format for a dtype/rank no port value carries.
Status set_port_tensor(const SharedTensor& t, PortValue& v);

}  // namespace edge::pipeline
