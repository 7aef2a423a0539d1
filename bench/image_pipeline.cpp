// The image input pipeline alone, on one thread, against a plain full-size JPEG decode.
//
//   build/bin/image_pipeline DIR [--size 224] [--batch 32] [--rounds 5] [--workers 0]
//
// DIR is a folder of class folders of JPEGs (bench/make_photo_folder.py makes one). Reports, as
// one JSON line, images per second of
//   - tjdecompress: read each file and tjDecompress2 it at full size to RGB (libjpeg-turbo's
//     TurboJPEG API), the cost of merely decoding the data set;
//   - pipeline: dtnn's loader with random_resized_crop + flip to size x size, normalised into
//     the model's input layout (NCHW floats): with --workers 0 on the calling thread alone,
//     else on that many worker threads while the caller waits.
// Both read the files through the page cache; a first untimed pass warms it. The two alternate,
// one pass over every file each, for --rounds rounds, and the fastest pass of each is reported,
// so that other work on a shared machine slows both alike or neither.
#include "runtime/train/data/Loader.h"

#include <turbojpeg.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

using namespace dtnn;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<unsigned char> readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// Seconds to read and fully decode every file `passes` times.
double timeTjDecompress(const ImageFolderIndex &index, int passes) {
  tjhandle tj = tjInitDecompress();
  std::vector<unsigned char> rgb;
  double start = now();
  for (int p = 0; p < passes; ++p)
    for (int64_t i = 0; i < index.count(); ++i) {
      std::vector<unsigned char> bytes = readFile(index.path(i));
      int w = 0, h = 0, sub = 0, cs = 0;
      if (tjDecompressHeader3(tj, bytes.data(), bytes.size(), &w, &h, &sub, &cs) != 0) {
        std::cerr << index.path(i) << ": " << tjGetErrorStr2(tj) << "\n";
        std::exit(1);
      }
      rgb.resize(size_t(w) * size_t(h) * 3);
      if (tjDecompress2(tj, bytes.data(), bytes.size(), rgb.data(), w, 0, h, TJPF_RGB, 0) != 0) {
        std::cerr << index.path(i) << ": " << tjGetErrorStr2(tj) << "\n";
        std::exit(1);
      }
    }
  double seconds = now() - start;
  tjDestroy(tj);
  return seconds;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: image_pipeline DIR [--size 224] [--batch 32] [--rounds 5] [--workers 0]\n";
    return 2;
  }
  std::string dir = argv[1];
  int64_t size = 224, batch = 32, rounds = 5, workers = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    int64_t v = std::atoll(argv[i + 1]);
    if (a == "--size") size = v;
    else if (a == "--batch") batch = v;
    else if (a == "--rounds") rounds = v;
    else if (a == "--workers") workers = v;
    else {
      std::cerr << "unknown option " << a << "\n";
      return 2;
    }
  }
  Expected<ImageFolderIndex> index = indexImageFolder(dir);
  if (!index) {
    std::cerr << index.error().message() << "\n";
    return 1;
  }
  Dataset data;
  data.count = index->count();
  data.labels = index->labels;
  data.numClasses = int32_t(index->classes.size());
  data.sampleShape = {3, size, size};
  data.skipBadImages = false;
  data.files = std::make_shared<ImageFolderIndex>(std::move(*index));

  LoaderOptions lo;
  lo.batch = batch;
  lo.norm = {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};
  lo.transform.crop = ImageTransform::Crop::RandomResized;
  lo.transform.flip = 0.5;
  lo.transform.height = lo.transform.width = size;
  lo.prefetch = workers > 0;
  lo.workers = int(std::max<int64_t>(workers, 1));
  BatchLoader loader(data, {}, lo);

  timeTjDecompress(*data.files, 1); // warms the page cache
  double tj = 1e30, pipeline = 1e30;
  for (int64_t r = 0; r < rounds; ++r) {
    tj = std::min(tj, timeTjDecompress(*data.files, 1));
    double start = now();
    int64_t images = 0;
    loader.startEpoch(r);
    for (Batch b; loader.next(b);) images += b.size;
    if (Error err = loader.takeError()) {
      std::cerr << err.message() << "\n";
      return 1;
    }
    if (images != data.count) {
      std::cerr << "an epoch gave " << images << " images of " << data.count << "\n";
      return 1;
    }
    pipeline = std::min(pipeline, now() - start);
  }
  double tjRate = double(data.count) / tj, ours = double(data.count) / pipeline;
  std::printf("{\"files\": %lld, \"size\": %lld, \"workers\": %lld, \"tjdecompress_per_s\": %.1f, "
              "\"pipeline_per_s\": %.1f, \"pipeline_over_tjdecompress\": %.3f}\n",
              (long long)data.count, (long long)size, (long long)workers, tjRate, ours,
              ours / tjRate);
  return 0;
}
