// Runs small IR graphs for kernel tests, on the reference backend unless a
// GraphRunner is given another: parse IR text, run graph @f at batch 1 with
// given inputs and parameters, and compare the outputs with hand-computed
// values (or, in the differential tests, with another backend's).
#pragma once

#include "ir/Types.h"
#include "runtime/Tensor.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dtnn::runtime {
struct Plan;
} // namespace dtnn::runtime

namespace dtnn::test {

// Graph @f of IR text planned at batch 1 on one backend (the reference one by
// default), with its parameter store and executor kept between runs: for
// tests that run a graph several times, choose the thread count or backend,
// or read parameters back after a run (in-place updates such as the running
// statistics of batchnorm_train).
class GraphRunner {
public:
  // Parses `irText` and plans graph @f with `threads` threads (0: the
  // backend's default) on `backend` and its fallbacks, as
  // runtime::BackendSet::create makes them; ok() tells whether that worked
  // and error() why not.
  explicit GraphRunner(const std::string &irText, int threads = 0,
                       const std::string &backend = "reference");
  ~GraphRunner();
  GraphRunner(const GraphRunner &) = delete;
  GraphRunner &operator=(const GraphRunner &) = delete;

  // Whether the graph parsed and planned.
  bool ok() const;
  // Why it did not.
  std::string error() const;
  // The plan of graph @f (which backend runs each op, where each value
  // lives); null unless ok().
  const runtime::Plan *plan() const;

  // Writes parameter `name`. A missing parameter or another type is a test
  // failure and returns false.
  bool setParam(const std::string &name, const runtime::Tensor &t);
  // Writes `values` (row-major) to parameter `name`, converted to its type;
  // false after a test failure as above.
  bool setParam(const std::string &name, const std::vector<double> &values);
  // The current value of parameter `name`.
  runtime::Tensor param(const std::string &name) const;

  // Runs the graph once with one tensor per graph input, in order, and returns
  // its outputs. A wrong input count or type is a test failure and gives an
  // empty vector.
  std::vector<runtime::Tensor> run(const std::vector<runtime::Tensor> &inputs);
  // Runs the graph once with each input's values converted to its type, and
  // returns the outputs as doubles.
  std::vector<std::vector<double>> runValues(const std::vector<std::vector<double>> &inputs);

private:
  struct State;
  std::unique_ptr<State> s_;
};

// Parses `irText`, plans graph @f at batch 1 on the reference backend, writes
// `params` (by name; parameters not given stay zero) and `inputs` (one per
// graph input, in order), runs it once and returns its outputs. Failures are
// reported with GoogleTest and give an empty vector.
std::vector<runtime::Tensor> runGraph(const std::string &irText,
                                      const std::vector<runtime::Tensor> &inputs,
                                      const std::map<std::string, runtime::Tensor> &params = {});

// runGraph on plain values: each input and parameter is converted to its
// type, and the outputs come back as doubles.
std::vector<std::vector<double>>
runValues(const std::string &irText, const std::vector<std::vector<double>> &inputs,
          const std::map<std::string, std::vector<double>> &params = {});

// A tensor of `type` (static) holding `values` in row-major order, converted
// to its element type; a size mismatch is a test failure.
runtime::Tensor makeTensor(ir::TensorType type, std::vector<double> values);

// The elements of a tensor of any element type, as doubles.
std::vector<double> toDoubles(const runtime::Tensor &t);

// Expects `actual` to hold `expected` (row-major), each element within
// tol + tol * |expected|.
void expectTensorNear(const runtime::Tensor &actual, const std::vector<double> &expected,
                      double tol = 1e-6);

} // namespace dtnn::test
