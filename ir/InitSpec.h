// Initializers as a parameter's `init=` names them: a name ("he_normal") or a call with
// numbers and words ("trunc_normal(std=0.02)", "kaiming_uniform(a=2.236, mode=fan_out)"),
// checked against one catalogue, which the compiler uses to report a bad `init=` at its place
// and the runtime to draw the values (runtime/Init.cpp). The arguments and their defaults are
// torch.nn.init's:
//   zeros, ones, constant(val)
//   uniform(a=0, b=1)                          U(a, b)
//   normal(mean=0, std=1)                      N(mean, std)
//   trunc_normal(mean=0, std=1, a=-2, b=2)     N(mean, std) kept within [a, b]
//   xavier_uniform(gain=1), xavier_normal(gain=1), and their names glorot_uniform and
//   glorot_normal: bound gain sqrt(6 / (fan_in + fan_out)), std gain sqrt(2 / (fan_in + fan_out))
//   kaiming_uniform(a=0, mode=fan_in, nonlinearity=leaky_relu), kaiming_normal(...): std
//   gain / sqrt(fan), bound sqrt(3) std, with torch.nn.init.calculate_gain's gain
//   he_uniform, he_normal (kaiming with a ReLU gain), lecun_uniform, lecun_normal (gain 1)
//   embedding(padding_idx=-1)                  N(0, 1) with row padding_idx zero (nn.Embedding)
#pragma once

#include "ir/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dtnn::ir {

// What an initializer draws once a parameter's fans are known.
struct InitDraw {
  enum Kind { Constant, Uniform, Normal, TruncatedNormal } kind = Constant;
  double a = 0, b = 0;      // Constant: a; Uniform and truncation: [a, b]
  double mean = 0, std = 1; // Normal, TruncatedNormal
  int64_t zeroRow = -1;     // a row (index along the first dimension) left zero
};

// A parsed initializer: its name and every argument, defaults filled in.
struct InitSpec {
  std::string name;
  std::map<std::string, double> numbers;
  std::map<std::string, std::string> words; // mode, nonlinearity

  // The distribution for a parameter with these fans (each at least 1).
  InitDraw draw(int64_t fanIn, int64_t fanOut) const;
};

// Parses and checks `text`; fails with a message that names the problem
// ("unknown initializer 'he_unifrom'; did you mean 'he_uniform'? ...",
// "initializer 'normal' has no argument 'sd' (arguments: mean, std)").
Expected<InitSpec> parseInitSpec(const std::string &text);

// The initializers' names, sorted.
std::vector<std::string> initializerNames();

// PyTorch's defaults for the weight and bias of nn.Linear and nn.Conv2d (their
// reset_parameters): kaiming_uniform(a=sqrt(5)), which is U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
// and a bias uniform within the same bound, which the weight's fan_in sets.
std::string pytorchWeightInit();
std::string pytorchBiasInit(int64_t weightFanIn);

// Registers the choices of the train setting init_defaults: dtnn (the default) and pytorch.
Error registerInitDefaults();

} // namespace dtnn::ir
