#include "frontend/PyTorchNames.h"

#include "ir/Diagnostics.h"

#include <algorithm>
#include <map>

namespace dtnn::frontend {

namespace {

// PyTorch's name (torch.nn modules, torch.nn.functional, tensor methods, keyword arguments)
// and dtnn's.
const std::map<std::string, std::string> &pytorchNames() {
  static const std::map<std::string, std::string> names = {
      // Layers and functions.
      {"cat", "concat"}, {"concatenate", "concat"}, {"Linear", "dense"}, {"linear", "dense"},
      {"Conv2d", "conv2d"}, {"conv", "conv2d"}, {"BatchNorm2d", "batchnorm"},
      {"BatchNorm1d", "batchnorm"}, {"batch_norm", "batchnorm"}, {"ReLU", "relu"},
      {"ReLU6", "relu6"}, {"GELU", "gelu"}, {"SiLU", "silu"}, {"swish", "silu"},
      {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"}, {"LeakyReLU", "leaky_relu"},
      {"Hardswish", "hard_swish"}, {"hardswish", "hard_swish"}, {"Hardsigmoid", "hard_sigmoid"},
      {"hardsigmoid", "hard_sigmoid"}, {"MaxPool2d", "maxpool"}, {"max_pool2d", "maxpool"},
      {"AvgPool2d", "avgpool"}, {"avg_pool2d", "avgpool"}, {"Dropout", "dropout"},
      {"Flatten", "flatten"}, {"view", "reshape"}, {"permute", "transpose"},
      {"Softmax", "softmax"}, {"LogSoftmax", "log_softmax"}, {"Identity", "identity"},
      {"AdaptiveAvgPool2d", "adaptive_avgpool"}, {"adaptive_avg_pool2d", "adaptive_avgpool"},
      {"StochasticDepth", "drop_path"}, {"stochastic_depth", "drop_path"},
      {"LayerNorm", "layernorm"}, {"layer_norm", "layernorm"}, {"amax", "max"},
      {"bmm", "matmul"}, {"mm", "matmul"}, {"expand_as", "broadcast_like"},
      // Keyword arguments.
      {"padding", "pad"}, {"kernel_size", "kernel"}, {"dim", "axis"}, {"ceil_mode", "ceil"},
      {"out_channels", "channels"}, {"out_features", "units"}, {"negative_slope", "alpha"},
      {"count_include_pad", "count_pad"}, {"p", "rate"},
      {"start_dim", "axis"}, {"end_dim", "end_axis"}};
  return names;
}

} // namespace

std::string suggestName(const std::string &name, const std::vector<std::string> &candidates) {
  auto it = pytorchNames().find(name);
  if (it != pytorchNames().end() &&
      std::find(candidates.begin(), candidates.end(), it->second) != candidates.end())
    return it->second;
  return closestMatch(name, candidates);
}

std::string didYouMean(const std::string &name, const std::vector<std::string> &candidates) {
  std::string hint = suggestName(name, candidates);
  return hint.empty() ? "" : "; did you mean '" + hint + "'?";
}

} // namespace dtnn::frontend
