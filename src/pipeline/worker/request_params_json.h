// A request's generation settings (edge/engine.h RequestParams) on the wire to a worker:
// every field by name, so both sides agree on what the client asked for.
#pragma once

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "edge/engine.h"

namespace edge::pipeline {

nlohmann::json request_params_json(const RequestParams& p);
// Refuses fields of the wrong type and values the sampler would refuse.
Expected<RequestParams> request_params_from_json(const nlohmann::json& j);

}  // namespace edge::pipeline
