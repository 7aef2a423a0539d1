// Errors as values: dtnn's one error type, Error, and Expected<T>, used by the public API and the
// internals instead of exceptions, strings or flags. An Error is must-check: with checks on (a
// build without NDEBUG, or DTNN_ERROR_CHECKS=1) a failure destroyed or assigned over before anyone
// looked at it aborts with its message. The checks change no layout, only inline code, so a
// library and its users may be built with and without them.
#pragma once

#include <cassert>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#ifndef DTNN_ERROR_CHECKS
#ifdef NDEBUG
#define DTNN_ERROR_CHECKS 0
#else
#define DTNN_ERROR_CHECKS 1
#endif
#endif

namespace dtnn {

// A position in a source file; line and column are 1-based, 0 means unknown.
struct SourceLoc {
  std::string file;
  uint32_t line = 0;
  uint32_t col = 0;
  // Whether the location points into a file (its line is known).
  bool known() const { return line != 0; }
  bool operator==(const SourceLoc &o) const {
    return file == o.file && line == o.line && col == o.col;
  }
  bool operator<(const SourceLoc &o) const {
    if (file != o.file) return file < o.file;
    if (line != o.line) return line < o.line;
    return col < o.col;
  }
};

// An extra line of an Error, printed as "note: MESSAGE", at a place when one is known.
struct ErrorNote {
  SourceLoc loc;
  std::string message;
};

// A failure: a message, the source location it is about when there is one, and notes. A
// default-constructed Error is success. Move-only; testing it with operator bool, reading its
// message or passing it to consumeError counts as checking it.
class [[nodiscard]] Error {
public:
  // Success.
  Error() = default;
  // A moved failure must be checked again by its new owner, so that one returned after a test
  // still binds the caller.
  Error(Error &&o) noexcept : p_(std::move(o.p_)) { markUnchecked(); }
  // Aborts, with checks on, if this Error holds an unchecked failure.
  Error &operator=(Error &&o) noexcept {
    if (this != &o) {
      assertChecked();
      p_ = std::move(o.p_);
      markUnchecked();
    }
    return *this;
  }
  // Aborts, with checks on, if this Error holds an unchecked failure.
  ~Error() { assertChecked(); }

  // Success, spelt out.
  static Error success() { return Error(); }
  // A failure with a message and no location.
  static Error make(std::string message) { return make(SourceLoc{}, std::move(message)); }
  // A failure about a place in a source file.
  static Error make(SourceLoc loc, std::string message) {
    Error e;
    e.p_ = std::make_unique<Payload>();
    e.p_->loc = std::move(loc);
    e.p_->message = std::move(message);
    return e;
  }

  // True for a failure; marks this Error checked.
  explicit operator bool() const {
    markChecked();
    return p_ != nullptr;
  }
  // The message of a failure ("" for success); marks this Error checked.
  const std::string &message() const {
    markChecked();
    static const std::string none;
    return p_ ? p_->message : none;
  }
  // Where the failure is, if known.
  const SourceLoc &loc() const {
    static const SourceLoc none;
    return p_ ? p_->loc : none;
  }
  // The notes of a failure, in the order they were added.
  const std::vector<ErrorNote> &notes() const {
    static const std::vector<ErrorNote> none;
    return p_ ? p_->notes : none;
  }
  // Adds a note to a failure (success stays success).
  Error &addNote(std::string message, SourceLoc loc = {}) {
    if (p_) p_->notes.push_back({std::move(loc), std::move(message)});
    return *this;
  }
  // The same failure with a note added, for `return std::move(e).withNote(...)`.
  Error withNote(std::string message, SourceLoc loc = {}) && {
    addNote(std::move(message), std::move(loc));
    return std::move(*this);
  }
  // The failure as a compiler prints it without the source text: "FILE:LINE:COL: error: MESSAGE"
  // (or "error: MESSAGE" without a location), then one "note: ..." line per note, each line
  // ending in a newline; "" for success. Marks this Error checked.
  std::string format() const {
    markChecked();
    if (!p_) return "";
    std::string out = formatLine(p_->loc, "error", p_->message);
    for (const ErrorNote &n : p_->notes) out += formatLine(n.loc, "note", n.message);
    return out;
  }
  // Marks this Error checked without looking at it (consumeError is the usual spelling).
  void ignore() const { markChecked(); }

private:
  template <typename T> friend class Expected;
  struct Payload {
    SourceLoc loc;
    std::string message;
    std::vector<ErrorNote> notes;
    bool checked = false;
  };

  static std::string formatLine(const SourceLoc &loc, const char *kind, const std::string &msg) {
    std::string out;
    if (!loc.file.empty()) {
      out += loc.file + ":";
      if (loc.known()) out += std::to_string(loc.line) + ":" + std::to_string(loc.col) + ":";
      out += " ";
    }
    return out + kind + ": " + msg + "\n";
  }
  void markChecked() const {
#if DTNN_ERROR_CHECKS
    if (p_) p_->checked = true;
#endif
  }
  void markUnchecked() {
#if DTNN_ERROR_CHECKS
    if (p_) p_->checked = false;
#endif
  }
  void assertChecked() const {
#if DTNN_ERROR_CHECKS
    if (p_ && !p_->checked) {
      std::fprintf(stderr, "dtnn: an Error was destroyed without being checked: %s\n",
                   p_->message.c_str());
      std::abort();
    }
#endif
  }

  std::unique_ptr<Payload> p_;
};

// Marks an Error checked and drops it: for failures a caller deliberately ignores.
inline void consumeError(Error e) { e.ignore(); }

// Either a value of type T or a failure. A failure must be checked like an Error: testing the
// Expected with operator bool, or taking or reading its error, checks it. Success needs no check.
template <typename T> class [[nodiscard]] Expected {
public:
  // A value.
  Expected(T value) : storage_(std::move(value)) {}
  // A failure; `error` must not be success.
  Expected(Error error) : storage_(std::move(error)) {
    assert(std::get_if<Error>(&storage_)->p_ && "an Expected made from success");
  }
  // True when this holds a value; marks a failure checked.
  explicit operator bool() const {
    if (const Error *e = std::get_if<Error>(&storage_)) e->ignore();
    return std::holds_alternative<T>(storage_);
  }
  // The value. Only for an Expected that holds one.
  T &operator*() { return value(); }
  const T &operator*() const { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  // The failure; marks it checked. Only for an Expected that holds one.
  const Error &error() const {
    const Error *e = std::get_if<Error>(&storage_);
    assert(e && "error() of an Expected that holds a value");
    e->ignore();
    return *e;
  }
  // Moves the failure out (success if this holds a value); the caller must check it.
  Error takeError() {
    if (Error *e = std::get_if<Error>(&storage_)) return std::move(*e);
    return Error::success();
  }

private:
  T &value() {
    assert(std::holds_alternative<T>(storage_) && "the value of an Expected that holds an Error");
    return *std::get_if<T>(&storage_);
  }
  const T &value() const {
    assert(std::holds_alternative<T>(storage_) && "the value of an Expected that holds an Error");
    return *std::get_if<T>(&storage_);
  }

  std::variant<T, Error> storage_;
};

} // namespace dtnn
