// The activations the reference kernels apply, as scalar functions shared by
// the activation kernels and by the convolution and dense kernels, which
// apply their op's fused activation (the `act` attribute,
// ir/ops/FusedActivation.h) to each result row they compute.
#pragma once

#include "ir/IR.h"
#include "ir/ops/FusedActivation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace dtnn::reference {

template <typename T> T reluOf(T x) { return x > T(0) ? x : T(0); }
template <typename T> T relu6Of(T x) { return std::min(std::max(x, T(0)), T(6)); }
template <typename T> T sigmoidOf(T x) { return T(1) / (T(1) + std::exp(-x)); }
template <typename T> T tanhOf(T x) { return std::tanh(x); }

// The op's fused activation.
enum class FusedAct { None, Relu, Relu6, Sigmoid, Tanh };
inline FusedAct fusedActOf(const ir::Op &op) {
  std::string a = ir::fusedActivationOf(op);
  if (a == "relu") return FusedAct::Relu;
  if (a == "relu6") return FusedAct::Relu6;
  if (a == "sigmoid") return FusedAct::Sigmoid;
  if (a == "tanh") return FusedAct::Tanh;
  return FusedAct::None;
}

// y[i] = act(y[i]) for i < n.
template <typename T> void applyFusedAct(FusedAct act, T *y, int64_t n) {
  switch (act) {
  case FusedAct::None: return;
  case FusedAct::Relu: for (int64_t i = 0; i < n; ++i) y[i] = reluOf(y[i]); return;
  case FusedAct::Relu6: for (int64_t i = 0; i < n; ++i) y[i] = relu6Of(y[i]); return;
  case FusedAct::Sigmoid: for (int64_t i = 0; i < n; ++i) y[i] = sigmoidOf(y[i]); return;
  case FusedAct::Tanh: for (int64_t i = 0; i < n; ++i) y[i] = tanhOf(y[i]); return;
  }
}

} // namespace dtnn::reference
