// The engine of a text encoder (ModelConfig::encoder_only: BERT, nomic-bert): it serves
// embedding requests (GenerateRequest::pooling) and, with a classification head, rank
// requests (Pooling::kRank, one relevance score); it generates nothing.
//
// Requests wait in arrival order. A background loop runs steps: each takes the oldest
// waiting request and every following one with the same pooling while the step stays
// within max_batched_tokens tokens and max_seqs sequences, and runs them through one
// bert_encode (projections over all their tokens at once, attention per sequence). A
// sequence is never split across steps (every token attends to all others), so a prompt
// longer than max_batched_tokens, or than the model's positions, is refused at submit.
// Each request ends with one kDone chunk carrying its pooled row (or its score).
#pragma once

#include <memory>

#include "edge/engine.h"
#include "model/model.h"

namespace edge {

// `owned` (may be null) is `model` when the engine owns it. `model` must be an encoder.
Expected<std::unique_ptr<Engine>> make_encoder_engine(const Model& model, std::unique_ptr<Model> owned,
                                                      const EngineOptions& options);

}  // namespace edge
