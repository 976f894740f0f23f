// Scalar reference ops for audio models (the WavTokenizer decoder and its kin): 1-D
// convolution, group norm over channels x time, layer norm over channels, swish.
//
// Layouts: convolutions and group norm read channel-major activations [C][T] (time
// contiguous, as a conv wants); layer norm reads time-major rows [T][C] (channels
// contiguous). Weights are F32 here: a model converts its file's F16 at load.
#pragma once

#include <cstdint>

namespace edge::ref {

struct Conv1dShape {
  int64_t c_in = 0;    // input channels
  int64_t c_out = 0;   // output channels
  int64_t kernel = 1;  // taps
  int64_t groups = 1;  // c_in == c_out == groups: depthwise
  int64_t pad = 0;     // zeros on each side ("same" for odd k: kernel / 2)
};

// Output length for a stride-1, dilation-1 convolution of t input steps.
inline int64_t conv1d_out_len(const Conv1dShape& s, int64_t t) {
  return t + 2 * s.pad - s.kernel + 1;
}

// y[co][t] = bias[co] + sum_{ci in group(co), j} w[co][ci'][j] * x[ci][t + j - pad],
// with x zero outside [0, t_in).
//   x    [c_in][t_in]
//   w    [c_out][c_in / groups][kernel]   (PyTorch's Conv1d layout)
//   bias [c_out] or nullptr
//   y    [c_out][conv1d_out_len(s, t_in)]
// Returns false (and writes nothing) when the shape is inconsistent (groups not dividing
// the channels, output length < 1).
bool conv1d(const Conv1dShape& s, const float* x, int64_t t_in, const float* w, const float* bias,
            float* y);

// Group norm over [C][T]: channels split into `groups` consecutive groups; each group is
// normalised with the mean and variance of all its C/groups * T values, then
// y[c][t] = n[c][t] * gamma[c] + beta[c] (gamma/beta may be nullptr: 1 and 0).
// In place is allowed (y == x). Returns false when groups does not divide c.
bool group_norm(const float* x, int64_t c, int64_t t, int64_t groups, float eps, const float* gamma,
                const float* beta, float* y);

// Layer norm of each row of [rows][dim]: (x - mean) / sqrt(var + eps) * gamma + beta
// (population variance; gamma/beta may be nullptr). In place is allowed.
void layer_norm(const float* x, int64_t rows, int64_t dim, float eps, const float* gamma,
                const float* beta, float* y);

// x * sigmoid(x), in place (SiLU; WavTokenizer's "swish" non-linearity).
void swish(float* x, int64_t n);

// [rows][cols] -> [cols][rows].
void transpose(const float* x, int64_t rows, int64_t cols, float* y);

}  // namespace edge::ref
