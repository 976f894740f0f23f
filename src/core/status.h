// Status and Expected<T>: the error currency at every boundary where input comes from
// outside (files, requests, configurations). CHECK (check.h) is for internal invariants.
#pragma once

#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace edge {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // a bad request, flag or configuration value
  kInvalidFormat,     // a malformed or truncated file
  kNotFound,          // a missing file, tensor or key
  kUnsupported,       // a valid input we do not handle (unknown architecture, type)
  kOutOfRange,        // token id past the vocabulary, prompt past the context
  kResourceExhausted, // memory plan refused, KV budget exhausted
  kIoError,           // the OS refused a read, write or map
  kCancelled,
  kInternal,
  kDeadlineExceeded,  // a wait ran out of time (nothing is wrong; try again)
  kUnavailable,       // temporarily cannot serve (queue full, shutting down)
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }
  static Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status invalid_format(std::string m) { return {StatusCode::kInvalidFormat, std::move(m)}; }
  static Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
  static Status out_of_range(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
  static Status resource_exhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
  static Status io_error(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status deadline_exceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
  static Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid format: model.gguf: bad magic"
  std::string to_string() const;
  // Prefixes context: "loading x.gguf: " + message.
  Status with_context(const std::string& context) const {
    return ok() ? *this : Status(code_, context + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Expected<T> holds a value or a non-ok Status.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(Status status) : v_(std::move(status)) {  // NOLINT
    if (std::get<Status>(v_).ok()) v_ = Status::internal("Expected built from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  T& value() & { check_ok(); return std::get<T>(v_); }
  const T& value() const& { check_ok(); return std::get<T>(v_); }
  T&& value() && { check_ok(); return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void check_ok() const;
  std::variant<T, Status> v_;
};

[[noreturn]] void die_on_bad_expected(const Status& s);

template <typename T>
void Expected<T>::check_ok() const {
  if (!ok()) die_on_bad_expected(std::get<Status>(v_));
}

}  // namespace edge

// Propagate a non-ok Status / Expected from the current function.
#define EDGE_CONCAT_INNER(a, b) a##b
#define EDGE_CONCAT(a, b) EDGE_CONCAT_INNER(a, b)
#define RETURN_IF_ERROR(expr)                 \
  do {                                        \
    ::edge::Status _st = (expr);              \
    if (!_st.ok()) return _st;                \
  } while (0)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
#define ASSIGN_OR_RETURN(lhs, expr) ASSIGN_OR_RETURN_IMPL(EDGE_CONCAT(_exp_, __LINE__), lhs, expr)
