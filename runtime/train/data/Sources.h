// Named data sources, as the `data` setting of a train section writes them:
// `fashion_mnist()`, `mnist()`, `cifar10()` and `synthetic(shape=[1,28,28], classes=10,
// train_size=6000, test_size=1000)`. The file-backed sources take `dir="..."`.
#pragma once

#include "ir/Attributes.h"
#include "dtnn/Error.h"
#include "ir/RunSettings.h"
#include "runtime/train/data/Dataset.h"
#include "runtime/train/data/Loader.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dtnn {

// A data source call such as `fashion_mnist(dir="...")`: its name and its arguments.
using DataSpec = ir::SettingCall;

// The train and test sets of a source, the normalization usual for it, and a one-line
// description for logs.
struct DataSplits {
  Dataset train, test;
  Normalization norm;
  std::string description;
};

// Loads the source spec names. dir overrides the directory of a file-backed source (the
// `--data DIR` flag of dtnn-run); when empty, the source's `dir` argument or its default is
// used; a source without files refuses it. seed chooses the synthetic data. Errors name the source, the argument or the file, and
// say how to provide missing files.
Expected<DataSplits> loadData(const DataSpec &spec, const std::string &dir, uint64_t seed);

// Names of the known sources, sorted.
std::vector<std::string> dataSourceNames();

} // namespace dtnn
