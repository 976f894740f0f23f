// OpenAI-shaped errors: {"error": {"message", "type", "param", "code"}} with an HTTP status.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "core/status.h"

namespace edge::server {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the request field at fault ("" if none)
  std::string code;   // machine-readable reason ("" if none)
  int retry_after_s = 0;  // > 0: sent as a Retry-After header (429, 503)

  static ApiError bad_request(std::string message, std::string param = "", std::string code = "");
  nlohmann::json to_json() const;
};

// A Status from the engine or tokenizer as an API error: invalid argument / out of range
// -> 400, resource exhausted (KV budget, queue) -> 429, unavailable -> 503, else 500.
ApiError api_error_from_status(const Status& s);

// The body of an HTTP error status httplib produced by itself (404 route, 413 body).
ApiError api_error_for_http_status(int status);

}  // namespace edge::server
