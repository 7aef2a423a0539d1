// Named data sources, as the `data` setting of a train section writes them (`mnist()`,
// `synthetic(shape=[1,28,28], classes=10)`), an open registry: registerDataSource adds a
// source's choice to the run-settings schema and its loader in one call, and the built-in
// sources register through it (registerBuiltinDataSources). The file-backed sources take
// `dir="..."`.
#pragma once

#include "ir/Attributes.h"
#include "ir/Error.h"
#include "ir/RunSettings.h"
#include "runtime/train/data/Dataset.h"
#include "runtime/train/data/Loader.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dtnn {

// A data source call such as `fashion_mnist(dir="...")`: its name and its arguments.
using DataSpec = ir::SettingCall;

// The train and test sets of a source, the normalization usual for it, and a one-line
// description for logs.
struct DataSplits {
  Dataset train, test;
  Normalization norm; // set by the loader, or else the source's usual one
  std::string description;
  struct {
    int64_t resize = 0;     // evaluation's shorter side before the centre crop; 0: size / 0.875
    bool dctScaling = true; // JPEGs may be shrunk while decoded
  } images;                 // image files: how they become the model's input
};

// Loads a source: spec holds its arguments, each of the kind its registration declares; dir
// is the --data DIR override (empty unless the source reads files); seed chooses random data.
using DataLoadFn =
    std::function<Expected<DataSplits>(const DataSpec &spec, const std::string &dir, uint64_t seed)>;

// A data source: its choice in the run-settings schema (name, arguments, summary) and its
// implementation.
struct DataSourceDef {
  std::string name;
  std::vector<ir::ChoiceArg> args;
  std::string summary; // one line, for the printed schema
  DataLoadFn load;
  Normalization norm;      // the usual normalization of its samples
  bool readsFiles = false; // whether a data folder (--data DIR) applies
  bool isDefault = false;  // the source of a run that names none
};

// Registers a data source; `origin` names the registrant in messages. Fails when the name is
// taken.
Error registerDataSource(DataSourceDef def, const std::string &origin);

// Registers the built-in data sources (once; later calls do nothing).
Error registerBuiltinDataSources();

// Loads the source spec names. dir overrides the directory of a file-backed source (the
// `--data DIR` flag of dtnn-run); when empty, the source's `dir` argument or its default is
// used; a source without files refuses it. seed chooses the synthetic data. Errors name the source, the argument or the file, and
// say how to provide missing files.
Expected<DataSplits> loadData(const DataSpec &spec, const std::string &dir, uint64_t seed);

// The normalization of source spec's samples: its `mean` and `std` arguments, else the
// source's usual one (empty for an unknown source).
Normalization dataSourceNorm(const DataSpec &spec);

// Names of the known sources, sorted.
std::vector<std::string> dataSourceNames();

// Whether source `source` takes argument `arg` (a text source's seq_len).
bool dataSourceTakes(const std::string &source, const std::string &arg);

} // namespace dtnn
