// Checkpoints: named host tensors plus string metadata, stored in the safetensors format
// (https://github.com/huggingface/safetensors), so that other tools can read them. A file is an
// 8-byte little-endian header length N, N bytes of JSON describing each tensor (dtype, shape,
// byte range), then the tensor bytes back to back.
#pragma once

#include "ir/Error.h"
#include "runtime/train/CheckpointData.h"

#include <cstdint>
#include <string>

namespace dtnn::runtime {

// The largest JSON header loadCheckpoint accepts, in bytes.
constexpr uint64_t kMaxCheckpointHeaderBytes = 100'000'000;

// Fails with what shows that `ckpt` holds numbers that are not finite: "'w' holds 3 of 150
// values that are not finite (NaN or infinite)", for its first such floating-point tensor.
Error nonFiniteTensor(const Checkpoint &ckpt);

// Writes ckpt to path atomically (see writeOutput in ir/Output.h). The output depends only on ckpt:
// header keys are sorted, the data starts 8-byte aligned and holds the tensors grouped by
// element size, largest first, then by name, so every tensor is aligned to its element size.
// Errors start with "<path>: ".
Error saveCheckpoint(const std::string &path, const Checkpoint &ckpt);

// Reads and validates a safetensors file. Malformed or hostile input gives an error
// "<path>: <problem>"; memory use is bounded by the file size.
Expected<Checkpoint> loadCheckpoint(const std::string &path);

} // namespace dtnn::runtime
