// The state of a training run that a checkpoint holds: every parameter and
// buffer of the module (weights, running statistics, optimizer state), and
// as metadata the model, the progress (epoch, step), the seed and the
// schedule and early-stopping state.
#pragma once

#include "ir/Error.h"
#include "runtime/ParamStore.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace dtnn::runtime {

struct Progress {
  int64_t epoch = 0;       // epochs completed
  int64_t stepInEpoch = 0; // steps done in the epoch after them
  int64_t step = 0;        // steps done in all
};

// Fills every parameter of `store` with its initializer, seeded by `seed`.
Error initializeParams(ParamStore &store, uint64_t seed);

// Writes the parameters and `meta` (progress, seed, schedule state, ...) to
// `path` atomically.
Error saveTrainState(const std::string &path, const std::string &model, const ParamStore &store,
                     const Progress &progress, const std::map<std::string, std::string> &meta);

// Reads a checkpoint written by saveTrainState for model `model` into
// `store`; checks that it is for this model and holds exactly its
// parameters with their types. Returns the metadata; nothing is changed on
// error.
Expected<std::map<std::string, std::string>> loadTrainState(const std::string &path,
                                                            const std::string &model,
                                                            ParamStore &store, Progress &progress);

// Reads the tensors `names` (a model's weights and running statistics) of the
// safetensors file `path` into `store`: a dtnn checkpoint, whose optimizer
// state (other parameters of the module, or `<weight>.<state>` of any
// optimizer, as a module built for inference has none) is ignored, or a file written
// by another tool (such as converted PyTorch weights). Every missing, misshapen or
// unknown tensor is listed in one error; nothing is changed on error.
Error loadWeights(const std::string &path, const std::set<std::string> &names, ParamStore &store);

} // namespace dtnn::runtime
