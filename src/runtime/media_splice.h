// Media embeddings (include/edge/engine.h MediaEmbedding) inside the engine: checks on
// submit, and the sequence's prefix-cache keys and splice table.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "edge/engine.h"
#include "runtime/scheduler.h"

namespace edge {

// Spans inside the prompt, disjoint, with n_tokens * n_embd values; a bidirectional one no
// longer than a step (it is computed in one).
Status validate_media(const GenerateRequest& req, int32_t n_embd, int64_t max_step_tokens);

// The prefix-cache key of position i of a media span: a negative id (never a real token)
// drawn from the media hash, so blocks holding the same image at the same place hash alike
// and a different image never matches.
int32_t media_key_token(uint64_t media_hash, int64_t i);

// Replaces the placeholder ids of every span in seq->tokens by their keys and fills
// seq->splices with rows pointing into `media` (which must outlive the sequence).
void splice_media(const std::vector<MediaEmbedding>& media, SchedSeq* seq);

}  // namespace edge
