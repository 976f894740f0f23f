// Token sampling from a logit vector: greedy, temperature, top-k, top-p, min-p,
// repetition / presence / frequency penalties, and a seed (same seed, same tokens).
// Order of operations: penalties -> (temperature 0: argmax) -> top-k -> temperature ->
// softmax -> top-p -> min-p -> draw. Runs outside the engine lock (engine_loop.cpp).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace edge {

struct SamplingParams {
  float temperature = 0.8f;     // 0 = greedy
  int32_t top_k = 40;           // <= 0: off
  float top_p = 0.95f;          // >= 1: off
  float min_p = 0.05f;          // <= 0: off; relative to the most likely token
  float repeat_penalty = 1.0f;  // 1: off; divides positive logits, multiplies negative
  int32_t repeat_last_n = 64;   // window of history the penalties look at (-1: all)
  float presence_penalty = 0.f;   // subtracted once per token present in the window
  float frequency_penalty = 0.f;  // subtracted per occurrence in the window
  uint64_t seed = 0;

  static SamplingParams greedy() {
    SamplingParams p;
    p.temperature = 0.f;
    return p;
  }
  // Refuses values that make no sense (negative temperature, top_p outside (0,1], ...).
  Status validate() const;
};

// Constrained decoding: which tokens may come next. One guide per request, called on the
// engine's loop thread before each sampled token (never concurrently for one request).
// Tokens outside the allowed set get no probability; penalties, temperature and the cuts
// apply among the allowed ones.
class TokenGuide {
 public:
  virtual ~TokenGuide() = default;
  // The ids allowed next (non-empty, each in [0, n_vocab)), given the tokens generated so
  // far (the prompt excluded). The span stays valid until the next call.
  virtual std::span<const int32_t> allowed(std::span<const int32_t> generated) = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  // history: tokens seen so far (prompt + generated), for the penalties. allowed: when
  // non-empty, only these ids can be drawn (TokenGuide); ids outside the vocabulary are
  // ignored.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history,
                 std::span<const int32_t> allowed = {});
  // Speculative verification of one drafted token at this position: returns `draft` when
  // the rejection rule accepts it, otherwise a replacement drawn so that the result is
  // distributed exactly as sample() would draw (greedy: the argmax, accepted iff equal).
  int32_t verify(std::span<const float> logits, std::span<const int32_t> history, int32_t draft,
                 std::span<const int32_t> allowed = {});
  const SamplingParams& params() const { return params_; }

  struct Candidate {
    int32_t id;
    float logit;
    float p;
  };

 private:
  // Fills cands_[0, n) with the candidates sampling may draw and their (unnormalised)
  // probabilities; returns n. Greedy: n = 1, the argmax with p = 1.
  size_t distribution(std::span<const float> logits, std::span<const int32_t> history,
                      std::span<const int32_t> allowed);
  int32_t draw(size_t n);  // one draw from cands_[0, n) by p
  void apply_penalties(std::vector<Candidate>& cands, std::span<const int32_t> history) const;
  void restrict_to(std::span<const int32_t> allowed);

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<Candidate> cands_;  // reused across calls: [n_vocab]
};

// Index of the largest value (the lowest index on ties).
int32_t argmax(std::span<const float> v);

// v as a finite float: NaN -> the lowest finite value, +-inf -> +-max. A logit vector with
// NaN or inf in it (a broken model file) still samples and sorts with a defined order.
float finite_logit(float v);

}  // namespace edge
