// LeNet-5 on Fashion-MNIST through dtnn's C++ API (dtnn/Train.h): the program reads the data set
// into memory itself, builds the model with C++ calls, trains it with a callback per epoch,
// evaluates it, predicts the classes of a few test images and reads a weight back. With the same
// settings, seed and threads it reaches the accuracy `dtnn-run examples/lenet.dtnn` reaches;
// under mpirun each process trains its part of every batch, as dtnn-run's ranks do.
//
//   train_lenet [--data DIR] [--epochs N] [--threads T] [--print-model]
#include <dtnn/dtnn.h>

#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

namespace {

// Reads an IDX file (gzipped or not: zlib reads both) of `dims` dimensions into `out`.
bool readIdx(const std::string &path, int dims, std::vector<int64_t> &shape,
             std::vector<uint8_t> &out) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return false;
  unsigned char header[4 + 4 * 3];
  bool ok = gzread(f, header, unsigned(4 + 4 * dims)) == 4 + 4 * dims && header[3] == dims;
  int64_t count = 1;
  shape.clear();
  for (int i = 0; ok && i < dims; ++i) {
    const unsigned char *p = header + 4 + 4 * i;
    shape.push_back(int64_t(p[0]) << 24 | int64_t(p[1]) << 16 | int64_t(p[2]) << 8 | p[3]);
    count *= shape.back();
  }
  out.resize(ok ? size_t(count) : 0);
  ok = ok && gzread(f, out.data(), unsigned(out.size())) == int(out.size());
  gzclose(f);
  return ok;
}

// Images [N, 1, 28, 28] and labels [N] of one split ("train" or "t10k").
bool readSplit(const std::string &dir, const std::string &split, dtnn::Samples &s) {
  std::vector<int64_t> shape, labelShape;
  std::vector<uint8_t> pixels, labels;
  for (const char *suffix : {"", ".gz"})
    if (readIdx(dir + "/" + split + "-images-idx3-ubyte" + suffix, 3, shape, pixels) &&
        readIdx(dir + "/" + split + "-labels-idx1-ubyte" + suffix, 1, labelShape, labels)) {
      s.inputs = dtnn::HostTensor::u8({shape[0], 1, shape[1], shape[2]}, std::move(pixels));
      s.labels = dtnn::HostTensor::i32({labelShape[0]},
                                        std::vector<int32_t>(labels.begin(), labels.end()));
      return true;
    }
  return false;
}

// LeNet-5 as examples/lenet.dtnn writes it, call by call.
dtnn::ModelBuilder lenet() {
  dtnn::ModelBuilder b("LeNet", "x", "f32[N, 1, 28, 28]", "f32[N, 10]");
  auto h = b.apply(b.input(), "conv2d", {int64_t(6)}, {{"kernel", int64_t(5)}, {"pad", int64_t(2)}});
  h = b.apply(b.apply(h, "relu"), "maxpool", {int64_t(2)});
  h = b.apply(h, "conv2d", {int64_t(16)}, {{"kernel", int64_t(5)}});
  h = b.apply(b.apply(h, "relu"), "maxpool", {int64_t(2)});
  h = b.apply(h, "flatten");
  h = b.apply(b.apply(h, "dense", {int64_t(120)}), "relu");
  h = b.apply(b.apply(h, "dense", {int64_t(84)}), "relu");
  b.output(b.apply(h, "dense", {int64_t(10)}));
  b.setting("data", "fashion_mnist()");
  b.setting("loss", "softmax_cross_entropy");
  b.setting("optimizer", "sgd(lr=0.01, momentum=0.9)");
  b.setting("batch", "64");
  b.setting("epochs", "5");
  return b;
}

} // namespace

int main(int argc, char **argv) {
  std::string data = "/usr/share/datasets/fashion-mnist", epochs, threads;
  bool printModel = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--data" && i + 1 < argc) data = argv[++i];
    else if (a == "--epochs" && i + 1 < argc) epochs = argv[++i];
    else if (a == "--threads" && i + 1 < argc) threads = argv[++i];
    else if (a == "--print-model") printModel = true;
    else {
      std::fprintf(stderr, "usage: train_lenet [--data DIR] [--epochs N] [--threads T] [--print-model]\n");
      return 2;
    }
  }
  dtnn::Expected<dtnn::Model> model = dtnn::Model::fromBuilder(lenet());
  if (!model) {
    std::fprintf(stderr, "train_lenet: %s\n", model.error().message().c_str());
    return 1;
  }
  if (printModel) {
    std::cout << model->ir();
    return 0;
  }
  dtnn::Samples train, test;
  if (!readSplit(data, "train", train) || !readSplit(data, "t10k", test)) {
    std::fprintf(stderr, "train_lenet: cannot read Fashion-MNIST's IDX files in %s\n", data.c_str());
    return 1;
  }
  bool leader = dtnn::processRank() == 0;
  dtnn::TrainOptions o;
  if (!epochs.empty()) o.settings["epochs"] = epochs;
  if (!threads.empty()) o.threads = std::stoi(threads);
  o.mean = {0.2860f}; // Fashion-MNIST's, as dtnn-run's fashion_mnist() normalizes
  o.std = {0.3530f};
  o.onEpoch = [&](int64_t epoch, const std::map<std::string, double> &m) {
    if (leader)
      std::printf("epoch %lld: train_loss %.4f test_acc %.2f%%\n", static_cast<long long>(epoch),
                  m.at("train_loss"), 100 * m.at("test_acc"));
  };
  if (dtnn::Error e = model->train(train, test, o)) {
    std::fprintf(stderr, "train_lenet: %s\n", e.message().c_str());
    return 1;
  }
  auto eval = model->evaluate(test, o);
  if (!eval) {
    std::fprintf(stderr, "train_lenet: %s\n", eval.error().message().c_str());
    return 1;
  }
  // The first five test images' classes.
  dtnn::HostTensor five = dtnn::HostTensor::u8(
      {5, 1, 28, 28}, std::vector<uint8_t>(test.inputs.bytes.begin(),
                                           test.inputs.bytes.begin() + 5 * 28 * 28));
  auto logits = model->predict(five, o);
  auto weight = model->weight("conv2d.0.weight");
  if (!logits || !weight) {
    std::fprintf(stderr, "train_lenet: %s\n",
                 (!logits ? logits.error() : weight.error()).message().c_str());
    return 1;
  }
  if (!leader) return 0;
  std::printf("test accuracy: %.2f%%\n", 100 * eval->at("test_acc"));
  std::vector<float> z = logits->floats();
  std::printf("classes of the first five test images:");
  for (int i = 0; i < 5; ++i) {
    int best = 0;
    for (int c = 1; c < 10; ++c)
      if (z[size_t(i * 10 + c)] > z[size_t(i * 10 + best)]) best = c;
    std::printf(" %d", best);
  }
  const int32_t *labels = reinterpret_cast<const int32_t *>(test.labels.bytes.data());
  std::printf(" (labels %d %d %d %d %d)\n", labels[0], labels[1], labels[2], labels[3], labels[4]);
  std::printf("conv2d.0.weight: %s [%lld, %lld, %lld, %lld]\n", weight->dtype.c_str(),
              static_cast<long long>(weight->shape[0]), static_cast<long long>(weight->shape[1]),
              static_cast<long long>(weight->shape[2]), static_cast<long long>(weight->shape[3]));
  return 0;
}
