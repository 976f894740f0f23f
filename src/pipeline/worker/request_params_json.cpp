#include "pipeline/worker/request_params_json.h"

namespace edge::pipeline {

nlohmann::json request_params_json(const RequestParams& p) {
  const SamplingParams& s = p.sampling;
  return {{"temperature", s.temperature},
          {"top_k", s.top_k},
          {"top_p", s.top_p},
          {"min_p", s.min_p},
          {"repeat_penalty", s.repeat_penalty},
          {"repeat_last_n", s.repeat_last_n},
          {"presence_penalty", s.presence_penalty},
          {"frequency_penalty", s.frequency_penalty},
          {"seed", s.seed},
          {"max_tokens", p.max_tokens},
          {"stop", p.stop},
          {"stop_ids", p.stop_ids},
          {"ignore_eos", p.ignore_eos},
          {"logprobs", p.logprobs}};
}

Expected<RequestParams> request_params_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Status::invalid_argument("request params must be an object");
  RequestParams p;
  SamplingParams& s = p.sampling;
  try {
    s.temperature = j.at("temperature").get<float>();
    s.top_k = j.at("top_k").get<int32_t>();
    s.top_p = j.at("top_p").get<float>();
    s.min_p = j.at("min_p").get<float>();
    s.repeat_penalty = j.at("repeat_penalty").get<float>();
    s.repeat_last_n = j.at("repeat_last_n").get<int32_t>();
    s.presence_penalty = j.at("presence_penalty").get<float>();
    s.frequency_penalty = j.at("frequency_penalty").get<float>();
    s.seed = j.at("seed").get<uint64_t>();
    p.max_tokens = j.at("max_tokens").get<int32_t>();
    p.stop = j.at("stop").get<std::vector<std::string>>();
    p.stop_ids = j.at("stop_ids").get<std::vector<int32_t>>();
    p.ignore_eos = j.at("ignore_eos").get<bool>();
    p.logprobs = j.at("logprobs").get<int32_t>();
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid_argument(std::string("request params: ") + e.what());
  }
  RETURN_IF_ERROR(s.validate());
  return p;
}

}  // namespace edge::pipeline
