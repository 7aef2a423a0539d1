// Graded logging through one logger: DTNN_LOG=info|debug|trace (off when unset) makes the
// library print what it decides, a line each to stderr, `dtnn[LEVEL] COMPONENT: message`
// (`dtnn[LEVEL] rank R COMPONENT: message` under mpirun):
//   info   a summary of each plan (graph, batch, steps, backends, conversions, memory), of the
//          gradient buckets, of a run's set-up;
//   debug  each op of a plan (backend, layouts) and each bucket (its gradients and bytes);
//   trace  what is generated: the LLVM IR of each kernel the jit compiles.
// Off, a log statement costs a load and a branch: DTNN_LOG_AT builds its message only when the
// level is on.
#pragma once

#include <string>
#include <string_view>

namespace dtnn::log {

enum class Level { Off = 0, Info = 1, Debug = 2, Trace = 3 };

namespace detail {
// The level in force, read from DTNN_LOG at start-up (a bad value warns once and leaves it off).
extern const Level current;
} // namespace detail

inline bool enabled(Level l) { return static_cast<int>(l) <= static_cast<int>(detail::current); }

// Writes one line (or several, each prefixed) at level l for component (a pass, "plan", "jit").
void write(Level l, std::string_view component, std::string_view message);

// The rank that prefixes this process's lines (under mpirun).
void setRank(int rank);

} // namespace dtnn::log

// Logs the message `expr` (a std::string expression, evaluated only when LEVEL is on) at LEVEL
// (Info, Debug or Trace) for COMPONENT.
#define DTNN_LOG_AT(LEVEL, COMPONENT, expr)                                                        \
  do {                                                                                             \
    if (::dtnn::log::enabled(::dtnn::log::Level::LEVEL))                                           \
      ::dtnn::log::write(::dtnn::log::Level::LEVEL, COMPONENT, (expr));                            \
  } while (0)
