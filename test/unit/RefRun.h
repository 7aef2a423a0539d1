// Runs small IR graphs on the reference backend for kernel tests: parse IR
// text, run graph @f at batch 1 with given inputs and parameters, and compare
// the outputs with hand-computed values.
#pragma once

#include "ir/Types.h"
#include "runtime/Tensor.h"

#include <map>
#include <string>
#include <vector>

namespace dtnn::test {

// Parses `irText`, plans graph @f at batch 1 on the reference backend, writes
// `params` (by name; parameters not given stay zero) and `inputs` (one per
// graph input, in order), runs it once and returns its outputs. Failures are
// reported with GoogleTest and give an empty vector.
std::vector<runtime::Tensor> runGraph(const std::string &irText,
                                      const std::vector<runtime::Tensor> &inputs,
                                      const std::map<std::string, runtime::Tensor> &params = {});

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
