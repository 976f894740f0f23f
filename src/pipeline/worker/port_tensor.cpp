#include "pipeline/worker/port_tensor.h"

#include <fmt/format.h>

namespace edge::pipeline {
namespace {

template <typename T>
std::span<const uint8_t> byte_span(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

template <typename T>
void copy_out(const SharedTensor& t, std::vector<T>& out) {
  auto s = t.as<T>();
  out.assign(s.begin(), s.end());
}

}  // namespace

Expected<std::optional<PortTensor>> port_tensor(const PortValue& v) {
  const int arrays = !v.tokens.empty() + !v.samples.empty() + !v.pixels.empty() + !v.embeddings.empty();
  if (arrays > 1)
    return Status::invalid_argument("a port value carries at most one of tokens, samples, pixels, embeddings");
  if (!v.tokens.empty())
    return std::optional<PortTensor>(
        PortTensor{TensorDtype::kI32, {static_cast<int64_t>(v.tokens.size())}, byte_span(v.tokens)});
  if (!v.samples.empty())
    return std::optional<PortTensor>(
        PortTensor{TensorDtype::kF32, {static_cast<int64_t>(v.samples.size())}, byte_span(v.samples)});
  if (!v.pixels.empty()) {
    if (v.width <= 0 || v.height <= 0 || static_cast<int64_t>(v.pixels.size()) != v.width * v.height * 3)
      return Status::invalid_argument(fmt::format("an image of {} bytes is not {} x {} x 3", v.pixels.size(),
                                                  v.height, v.width));
    return std::optional<PortTensor>(PortTensor{TensorDtype::kU8, {v.height, v.width, 3}, byte_span(v.pixels)});
  }
  if (!v.embeddings.empty()) {
    const int64_t n = static_cast<int64_t>(v.embeddings.size());
    if (v.rows <= 0 || n % v.rows != 0)
      return Status::invalid_argument(fmt::format("{} embedding values are not {} whole rows", n, v.rows));
    return std::optional<PortTensor>(PortTensor{TensorDtype::kF32, {v.rows, n / v.rows}, byte_span(v.embeddings)});
  }
  return std::optional<PortTensor>();
}

Status set_port_tensor(const SharedTensor& t, PortValue& v) {
  const size_t rank = t.shape.size();
  if (t.dtype == TensorDtype::kI32 && rank == 1) {
    copy_out(t, v.tokens);
  } else if (t.dtype == TensorDtype::kF32 && rank == 1) {
    copy_out(t, v.samples);
  } else if (t.dtype == TensorDtype::kU8 && rank == 3 && t.shape[2] == 3) {
    copy_out(t, v.pixels);
    v.height = t.shape[0], v.width = t.shape[1];
  } else if (t.dtype == TensorDtype::kF32 && rank == 2) {
    copy_out(t, v.embeddings);
    v.rows = t.shape[0];
  } else {
    return Status::invalid_format(fmt::format("no port value is a {} tensor of rank {}",
                                              tensor_dtype_name(t.dtype), rank));
  }
  return Status();
}

}  // namespace edge::pipeline
