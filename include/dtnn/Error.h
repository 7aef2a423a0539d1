// Errors as values: a small Error type and Expected<T>, used across component
// boundaries instead of exceptions.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace dtnn {

// A failure with a human-readable message. An empty Error means success.
class Error {
public:
  Error() = default;
  static Error success() { return Error(); }
  static Error make(std::string message) {
    Error e;
    e.message_ = std::move(message);
    e.failed_ = true;
    return e;
  }
  explicit operator bool() const { return failed_; }
  const std::string &message() const { return message_; }

private:
  std::string message_;
  bool failed_ = false;
};

// Either a value of type T or an Error.
template <typename T> class Expected {
public:
  Expected(T value) : storage_(std::move(value)) {}
  Expected(Error error) : storage_(std::move(error)) { assert(std::get<Error>(storage_)); }
  explicit operator bool() const { return std::holds_alternative<T>(storage_); }
  T &operator*() { return std::get<T>(storage_); }
  const T &operator*() const { return std::get<T>(storage_); }
  T *operator->() { return &std::get<T>(storage_); }
  const T *operator->() const { return &std::get<T>(storage_); }
  const Error &error() const { return std::get<Error>(storage_); }
  Error takeError() { return std::get<Error>(std::move(storage_)); }

private:
  std::variant<T, Error> storage_;
};

} // namespace dtnn
