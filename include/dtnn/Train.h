// Driving dtnn from C++: a model built with C++ calls (ModelBuilder, which writes the model in
// the language, so it compiles to the IR a .dtnn file would) or read from a .dtnn file; trained
// on samples the program holds in memory, with a callback after each step and each epoch;
// evaluated; run on inputs (predict); its weights and per-epoch metrics read back. Training and
// evaluation go through the same compiler passes and runtime as dtnn-run, so the same model,
// settings, seed and thread count give the same result. Under mpirun, every rank runs the same
// program with the same samples and trains its part of each batch, as dtnn-run's ranks do.
//
//   dtnn::Model m = *dtnn::Model::fromFile("lenet.dtnn");
//   dtnn::TrainOptions o;
//   o.settings = {{"epochs", "2"}};
//   o.onEpoch = [](int64_t e, const auto &m) { std::printf("%lld %g\n", (long long)e, m.at("test_acc")); };
//   if (dtnn::Error e = m.train(trainSet, testSet, o)) ...
//   dtnn::Expected<dtnn::HostTensor> logits = m.predict(images);
#pragma once

#include "dtnn/Error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace dtnn {

// A tensor the program holds: its element type ("f32", "u8", "i32", "i64", "f64"), its shape and
// its bytes in C order.
struct HostTensor {
  std::string dtype = "f32";
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  static HostTensor f32(std::vector<int64_t> shape, const std::vector<float> &values);
  static HostTensor u8(std::vector<int64_t> shape, std::vector<uint8_t> values);
  static HostTensor i32(std::vector<int64_t> shape, const std::vector<int32_t> &values);
  int64_t numel() const;
  // The values of an f32 tensor.
  std::vector<float> floats() const;
};

// Labelled samples: images as u8 pixels [N, C, H, W] (or i32 tokens [N, T] for a model of token
// sequences) and their labels, i32 [N] (or [N, T]).
struct Samples {
  HostTensor inputs, labels;
};

struct TrainOptions {
  // Train settings over the model's train section, by the names of dtnn-run's flags:
  // {"epochs", "3"}, {"batch", "128"}, {"lr", "0.05"}, {"optimizer", "adam"}, {"seed", "7"}, ...
  std::map<std::string, std::string> settings;
  int threads = 0;         // threads a rank; 0: as dtnn-run chooses
  std::string backend;     // empty: the default backend
  // The per-channel normalization of u8 images for a model of f32 images, x = (v/255 - mean)/std
  // (one value, or one per channel); empty: v/255.
  std::vector<float> mean, std;
  std::ostream *out = nullptr; // where rank 0 prints dtnn-run's lines (null: nowhere)
  // Called after each train step (global step, 1-based epoch, loss, learning rate) and after each
  // epoch (its figures: train_loss, train_acc, test_loss, test_acc, lr, ...), on every rank.
  std::function<void(int64_t step, int64_t epoch, double loss, double lr)> onStep;
  std::function<void(int64_t epoch, const std::map<std::string, double> &metrics)> onEpoch;
};

// A model written with C++ calls: each call adds a line of the model's body, so the result is
// the model in the language (source()), which compiles to the IR that text would.
class ModelBuilder {
public:
  using Arg = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>,
                           std::vector<double>>;
  using Named = std::vector<std::pair<std::string, Arg>>;
  struct Value {
    std::string name;
  };

  // A model `name` of one input `input` of type `inputType` ("f32[N, 1, 28, 28]") giving
  // `outputType` ("f32[N, 10]").
  ModelBuilder(std::string name, std::string input, std::string inputType,
               std::string outputType);
  Value input() const { return {input_}; }
  // x |> layer(args..., key=value...): a layer, block or activation of the language.
  Value apply(const Value &x, const std::string &layer, const std::vector<Arg> &args = {},
              const Named &named = {});
  // a + b, elementwise (a residual connection).
  Value add(const Value &a, const Value &b);
  // The model's result.
  void output(const Value &v);
  // A setting of the train section, as the language writes its value: ("data",
  // "fashion_mnist()"), ("optimizer", "sgd(lr=0.01, momentum=0.9)"), ("batch", "64").
  void setting(const std::string &key, const std::string &value);
  // The model in the language.
  std::string source() const;
  const std::string &name() const { return name_; }

private:
  std::string name_, input_, inputType_, outputType_, result_;
  std::vector<std::string> lines_, settings_;
  int next_ = 0;
};

// This process's rank among the processes mpirun started (0 without mpirun), and their number:
// a program prints on rank 0 alone, as dtnn-run does.
int processRank();
int processCount();

class Model {
public:
  // The model of a .dtnn file (`model` names one of several); of source text named `name` (for
  // messages and relative imports); or of a builder. Errors are the compiler's diagnostics.
  static Expected<Model> fromFile(const std::string &path, const std::string &model = "");
  static Expected<Model> fromSource(const std::string &name, const std::string &text);
  static Expected<Model> fromBuilder(const ModelBuilder &b);
  Model(Model &&) noexcept;
  Model &operator=(Model &&) noexcept;
  ~Model();

  // The model's IR after the default pipeline, as `dtnnc compile` prints it.
  const std::string &ir() const;
  // Trains from the current weights (the initializers' at first) on `train`, evaluating `test`
  // after each epoch; keeps the trained weights and the epochs' figures (history()).
  Error train(const Samples &train, const Samples &test, const TrainOptions &o = {});
  // The loss and metrics of the current weights on `test` (test_loss, test_acc, ...).
  Expected<std::map<std::string, double>> evaluate(const Samples &test, const TrainOptions &o = {});
  // The model's outputs for `inputs` (the input's type, any batch), in inference mode; u8 images
  // for a model of f32 images are normalized as TrainOptions says.
  Expected<HostTensor> predict(const HostTensor &inputs, const TrainOptions &o = {});
  // The weights and buffers (running statistics) by name, after training or as initialized.
  std::vector<std::string> weightNames() const;
  Expected<HostTensor> weight(const std::string &name) const;
  // The figures of each epoch trained so far.
  const std::vector<std::map<std::string, double>> &history() const;

  struct Impl; // libdtnn's

private:
  explicit Model(std::unique_ptr<Impl> impl);
  static Expected<Model> compiled(std::string name, std::string text, std::string model);
  std::unique_ptr<Impl> impl_;
};

} // namespace dtnn
