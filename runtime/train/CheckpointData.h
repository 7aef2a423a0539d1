// The content of a checkpoint: named host tensors and string metadata. Checkpoint.h reads and
// writes it as a file; SafetensorsHeader.h describes it in the file's JSON header.
#pragma once

#include "runtime/Tensor.h"

#include <map>
#include <string>

namespace dtnn::runtime {

// The content of one checkpoint file.
struct Checkpoint {
  // Tensors by name; every dtype of ir::DType can be stored, shapes must be static.
  std::map<std::string, Tensor> tensors;
  // Free-form strings, stored as the header's "__metadata__" object.
  std::map<std::string, std::string> metadata;
};

} // namespace dtnn::runtime
