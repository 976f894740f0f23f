#include "server/api_error.h"

namespace edge::server {

ApiError ApiError::bad_request(std::string message, std::string param, std::string code) {
  ApiError e;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

nlohmann::json ApiError::to_json() const {
  nlohmann::json err = {{"message", message}, {"type", type}};
  err["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
  err["code"] = code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code);
  return {{"error", err}};
}

ApiError api_error_from_status(const Status& s) {
  ApiError e;
  e.message = s.message();
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kInvalidFormat:
      e.http_status = 400;
      break;
    case StatusCode::kNotFound:
      e.http_status = 404;
      e.code = "not_found";
      break;
    case StatusCode::kResourceExhausted:
      e.http_status = 429;
      e.type = "rate_limit_error";  // the client may retry later
      e.code = "resource_exhausted";
      e.retry_after_s = 1;
      break;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
      e.http_status = 503;
      e.type = "server_error";
      e.code = "unavailable";
      break;
    default:
      e.http_status = 500;
      e.type = "server_error";
      e.code = status_code_name(s.code());
      break;
  }
  return e;
}

ApiError api_error_for_http_status(int status) {
  ApiError e;
  e.http_status = status;
  switch (status) {
    case 404: e.message = "unknown route"; e.code = "not_found"; break;
    case 405: e.message = "method not allowed"; break;
    case 413: e.message = "request body too large"; e.code = "payload_too_large"; break;
    case 401: e.message = "missing or invalid API key"; e.type = "authentication_error"; e.code = "invalid_api_key"; break;
    default:
      e.message = "HTTP error " + std::to_string(status);
      if (status >= 500) e.type = "server_error";
  }
  return e;
}

}  // namespace edge::server
