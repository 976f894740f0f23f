#include "server/request_fields.h"

#include <cmath>

namespace edge::server {
namespace {
const nlohmann::json kNull = nullptr;

std::string num(double v) {
  nlohmann::json j = v;
  return j.dump();
}
}  // namespace

const nlohmann::json* RequestFields::get(const char* key) const {
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool RequestFields::has(const char* key) const { return get(key) != nullptr; }

void RequestFields::type_error(const char* key, const char* want) {
  fail(ApiError::bad_request(std::string("'") + key + "' must be " + want, key, "invalid_type"));
}

void RequestFields::boolean(const char* key, bool& out) {
  const auto* v = get(key);
  if (!v) return;
  if (!v->is_boolean()) return type_error(key, "a boolean");
  out = v->get<bool>();
}

void RequestFields::integer(const char* key, int64_t lo, int64_t hi, std::optional<int64_t>& out) {
  const auto* v = get(key);
  if (!v) return;
  // 3.0 is accepted as 3 (JavaScript clients have no integers); 3.5 is not.
  if (!v->is_number() || (v->is_number_float() && std::floor(v->get<double>()) != v->get<double>()))
    return type_error(key, "an integer");
  // Only a value that fits int64 is converted: a float at or past 2^63 (or an unsigned
  // literal past INT64_MAX) would otherwise wrap or be undefined in the cast.
  constexpr double kTwo63 = 9223372036854775808.0;
  std::optional<int64_t> value;
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) value = static_cast<int64_t>(v->get<uint64_t>());
  } else if (v->is_number_integer()) {
    value = v->get<int64_t>();
  } else if (const double d = v->get<double>(); d >= -kTwo63 && d < kTwo63) {
    value = static_cast<int64_t>(d);
  }
  if (!value || *value < lo || *value > hi)
    return fail(ApiError::bad_request(std::string("'") + key + "' must be an integer between " + std::to_string(lo) +
                                          " and " + std::to_string(hi) + ", got " + v->dump(),
                                      key, "out_of_range"));
  out = value;
}

void RequestFields::number(const char* key, double lo, double hi, std::optional<double>& out) {
  const auto* v = get(key);
  if (!v) return;
  if (!v->is_number()) return type_error(key, "a number");
  const double d = v->get<double>();
  if (!(d >= lo && d <= hi))
    return fail(ApiError::bad_request(
        std::string("'") + key + "' must be between " + num(lo) + " and " + num(hi) + ", got " + v->dump(), key,
        "out_of_range"));
  out = d;
}

void RequestFields::string(const char* key, std::optional<std::string>& out) {
  const auto* v = get(key);
  if (!v) return;
  if (!v->is_string()) return type_error(key, "a string");
  out = v->get<std::string>();
}

void RequestFields::string_or_list(const char* key, size_t max_items, std::vector<std::string>& out) {
  const auto* v = get(key);
  if (!v) return;
  if (v->is_string()) {
    if (!v->get<std::string>().empty()) out.push_back(v->get<std::string>());
    return;
  }
  if (!v->is_array()) return type_error(key, "a string or a list of strings");
  if (v->size() > max_items)
    return fail(ApiError::bad_request(std::string("'") + key + "' has more than " + std::to_string(max_items) +
                                          " items",
                                      key, "out_of_range"));
  for (const auto& item : *v) {
    if (!item.is_string()) return type_error(key, "a string or a list of strings");
    if (!item.get<std::string>().empty()) out.push_back(item.get<std::string>());
  }
}

const nlohmann::json& RequestFields::object(const char* key) {
  const auto* v = get(key);
  if (!v) return kNull;
  if (!v->is_object()) {
    type_error(key, "an object");
    return kNull;
  }
  return *v;
}

const nlohmann::json& RequestFields::array(const char* key) {
  const auto* v = get(key);
  if (!v) return kNull;
  if (!v->is_array()) {
    type_error(key, "an array");
    return kNull;
  }
  return *v;
}

}  // namespace edge::server
