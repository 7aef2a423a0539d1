// --predict on images: a file or a folder of JPEG and PNG files, each resized and centre-cropped
// to the model's input as evaluation does, run through the forward graph, and named by the
// class map the checkpoint of the weights carries.
#include "runtime/train/Session.h"

#include "runtime/train/Checkpoint.h"
#include "runtime/train/Interrupt.h"
#include "runtime/train/data/Samples.h"
#include "runtime/train/data/Sources.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <numeric>
#include <sstream>

namespace dtnn::runtime::session {
namespace {

namespace fs = std::filesystem;

// The images --predict names: the file, or the image files of the folder in name order.
Expected<ImageFolderIndex> predictFiles(const std::string &path) {
  ImageFolderIndex index;
  std::error_code ec;
  std::vector<std::string> names;
  if (fs::is_directory(path, ec)) {
    index.root = path;
    for (const auto &e : fs::directory_iterator(path, ec))
      if (e.is_regular_file(ec) && isImageFileName(e.path().filename().string()))
        names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    if (names.empty()) return Error::make(path + ": has no JPEG or PNG files to predict");
  } else {
    index.root = fs::path(path).parent_path().string();
    if (index.root.empty()) index.root = ".";
    names.push_back(fs::path(path).filename().string());
  }
  for (const std::string &n : names) {
    index.offsets.push_back(index.names.size());
    index.names += n;
    index.names += '\0';
    index.labels.push_back(0);
  }
  return index;
}

// The class names of the checkpoint at `path` (its "classes" metadata), or none.
std::vector<std::string> checkpointClasses(const std::string &path) {
  std::vector<std::string> names;
  if (path.empty()) return names;
  Expected<Checkpoint> ckpt = loadCheckpoint(path);
  if (!ckpt) return names;
  auto it = ckpt->metadata.find("classes");
  if (it == ckpt->metadata.end()) return names;
  std::stringstream ss(it->second);
  for (std::string line; std::getline(ss, line);) names.push_back(line);
  return names;
}

} // namespace

RunStatus Session::predictImages() {
  StopContext stopping("while predicting the images of " + o_.predictPath);
  const ir::TensorType &in = fwd_->inputs()[0]->type();
  const ir::TensorType &outT = fwd_->outputs()[0]->type();
  const bool bytes = in.dtype == ir::DType::U8;
  if (in.rank() != 4 || in.dims[1] != 3 || (in.dtype != ir::DType::F32 && !bytes) ||
      outT.rank() != 2)
    return fail("--predict " + o_.predictPath + ": images are predicted by a classifier of RGB "
                "images, f32[N, 3, H, W] (or u8) -> f32[N, C]; model '" + fwd_->name() +
                "' maps " + in.str() + " to " + outT.str());
  Expected<ImageFolderIndex> index = predictFiles(o_.predictPath);
  if (!index) return fail(index.error().message());
  Dataset images;
  images.count = index->count();
  images.labels = index->labels;
  images.sampleShape = {3, in.dims[2], in.dims[3]};
  images.skipBadImages = false;
  images.files = std::make_shared<ImageFolderIndex>(std::move(*index));
  // Evaluation's transform, from the train section's data source.
  const ir::AttrValue *resize = s_.data.args.find("resize");
  const ir::AttrValue *dct = s_.data.args.find("dct_scaling");
  ImageTransform t = centreCropTransform(in.dims[2], in.dims[3],
                                         resize ? std::get<int64_t>(*resize) : 0,
                                         dct ? std::get<bool>(*dct) : true);
  t.resize = std::max(t.resize, std::max(t.height, t.width)); // a crop needs the whole size
  Normalization norm = dataSourceNorm(s_.data);
  if (norm.mean.size() != 1 && norm.mean.size() != 3) norm = {};
  SampleWriter writer(images, norm, t, s_.seed, bytes);

  std::vector<std::string> classes =
      checkpointClasses(o_.initFromPath.empty() ? o_.resumePath : o_.initFromPath);
  const int64_t C = outT.dims[1], numel = images.sampleNumel();
  const int64_t chunk = std::min<int64_t>(images.count, 32);
  auto exec = runner_->executor(*fwd_, chunk);
  if (!exec) return fail(exec.error().message());
  const size_t sampleBytes = size_t(numel) * (bytes ? 1 : sizeof(float));
  std::vector<char> batch(size_t(chunk) * sampleBytes);
  SampleScratch scratch;
  BadImageLog bad;
  for (int64_t first = 0; first < images.count; first += chunk) {
    int64_t n = std::min(chunk, images.count - first);
    for (int64_t j = 0; j < n; ++j) {
      auto got = writer.write(first + j, 0, batch.data() + size_t(j) * sampleBytes, scratch, bad);
      if (!got) return fail(got.error().message());
    }
    (*exec)->setInput(0, batch.data(), batch.size());
    if (Error e = (*exec)->run()) return fail(e.message());
    Tensor logits = (*exec)->output(0);
    const float *z = static_cast<const float *>(logits.raw());
    for (int64_t j = 0; j < n; ++j) {
      // Softmax probabilities, the five largest in order.
      const float *row = z + j * C;
      double top = *std::max_element(row, row + C), sum = 0;
      std::vector<double> p(static_cast<size_t>(C));
      for (int64_t c = 0; c < C; ++c) sum += p[size_t(c)] = std::exp(double(row[c]) - top);
      std::vector<int64_t> order(static_cast<size_t>(C));
      std::iota(order.begin(), order.end(), 0);
      size_t k = size_t(std::min<int64_t>(5, C));
      std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(k), order.end(),
                        [&](int64_t a, int64_t b) { return p[size_t(a)] > p[size_t(b)]; });
      std::ostringstream line;
      line << images.files->relative(first + j) << ":";
      for (size_t r = 0; r < k; ++r) {
        int64_t c = order[r];
        std::string name = size_t(c) < classes.size() ? classes[size_t(c)] : "class " + std::to_string(c);
        line << (r ? "," : "") << " " << name << " " << std::fixed << std::setprecision(2)
             << 100 * p[size_t(c)] / sum << "%";
      }
      out_ << line.str() << "\n";
    }
  }
  if (classes.empty())
    out_ << "(classes are numbered: the weights' checkpoint has no class names; one saved by "
            "training on an image folder has)\n";
  return RunStatus::Ok;
}

} // namespace dtnn::runtime::session
