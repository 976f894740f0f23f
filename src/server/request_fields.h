// Typed access to the fields of a JSON request object: each getter leaves `out` alone
// when the field is absent or null and records the first type/range error (400 naming
// the field). Callers check error() once after reading all fields.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"

namespace edge::server {

// o[key] when it is a string; `def` when the key is absent; when it holds another type, a
// value no caller compares equal to ("\x01non-string"), so checks like `== "text"` fail
// cleanly instead of nlohmann's value() throwing out of the request parser.
inline std::string string_or(const nlohmann::json& o, const char* key, const std::string& def) {
  auto it = o.find(key);
  if (it == o.end()) return def;
  return it->is_string() ? it->get<std::string>() : std::string("\x01non-string");
}

class RequestFields {
 public:
  explicit RequestFields(const nlohmann::json& obj) : obj_(obj) {}

  bool has(const char* key) const;
  void boolean(const char* key, bool& out);
  void integer(const char* key, int64_t lo, int64_t hi, std::optional<int64_t>& out);
  void number(const char* key, double lo, double hi, std::optional<double>& out);
  void string(const char* key, std::optional<std::string>& out);
  // A string or a list of strings (OpenAI `stop`); at most max_items, none empty.
  void string_or_list(const char* key, size_t max_items, std::vector<std::string>& out);
  // The field's raw value (null if absent), checked to be an object / array when present.
  const nlohmann::json& object(const char* key);
  const nlohmann::json& array(const char* key);

  void fail(ApiError e) {
    if (!error_) error_ = std::move(e);
  }
  const std::optional<ApiError>& error() const { return error_; }
  const nlohmann::json& body() const { return obj_; }

 private:
  const nlohmann::json* get(const char* key) const;  // null if absent or JSON null
  void type_error(const char* key, const char* want);

  const nlohmann::json& obj_;
  std::optional<ApiError> error_;
};

}  // namespace edge::server
