// Generating text (--generate): a model of token sequences i32[N, T] -> [N, T, V] continues a
// prompt one token at a time. Each step runs the forward graph on the last T tokens (fewer at
// the start, padded after them: causal attention keeps the padding out of the positions
// before it) and draws the next token from the logits of the last real position.
#include "runtime/train/Session.h"

#include "ir/Files.h"
#include "ir/SourceFile.h"
#include "runtime/train/Interrupt.h"
#include "runtime/train/data/Text.h"

#include <cerrno>
#include <cstring>

namespace dtnn::runtime::session {

namespace {

// The stream of the seed that draws sampled tokens, apart from the data's and the weights'.
constexpr uint64_t kSampleStream = 0x73616d706c65ull;

} // namespace

RunStatus Session::generate() {
  StopContext stopping("while generating text (--generate); nothing was written");
  const ir::TensorType &in = fwd_->inputs()[0]->type();
  const ir::TensorType &outT = fwd_->outputs()[0]->type();
  if (in.dtype != ir::DType::I32 || in.rank() != 2 || outT.rank() != 3 ||
      in.dims[1] != outT.dims[1] || outT.dtype != ir::DType::F32)
    return fail("--generate continues text with a model of token sequences, i32[N, T] -> "
                "f32[N, T, V]; model '" + fwd_->name() + "' maps " + in.str() + " to " + outT.str());
  const Vocabulary &vocab = data_.train.vocab;
  std::string prompt = o_.prompt;
  if (o_.promptFromFile) {
    auto text = readSourceFile(o_.predictPath, "prompt file");
    if (!text) return fail("--predict: " + text.error().message());
    prompt = *text;
  }
  auto tokens = tokenize(prompt, vocab);
  if (!tokens) return fail("the prompt: " + tokens.error().message());
  if (tokens->empty()) return fail("the prompt is empty; give the text that generation continues");
  int64_t window = in.dims[1], classes = outT.dims[2];
  auto exec = runner_->executor(*fwd_, 1);
  if (!exec) return fail(exec.error().message());
  Random rng(s_.seed, kSampleStream);
  std::vector<int32_t> text = *tokens, input(static_cast<size_t>(window));
  for (int64_t n = 0; n < o_.generate; ++n) {
    int64_t used = std::min<int64_t>(window, static_cast<int64_t>(text.size()));
    std::fill(input.begin(), input.end(), 0);
    std::copy(text.end() - used, text.end(), input.begin());
    (*exec)->setInput(0, input.data(), input.size() * sizeof(int32_t));
    if (Error e = (*exec)->run()) return fail(e.message());
    Tensor logits = (*exec)->output(0);
    const float *row = logits.data<float>() + (used - 1) * classes;
    text.push_back(sampleToken(row, std::min<int64_t>(classes, data_.train.numClasses),
                               o_.sampling, rng));
  }
  std::string continuation =
      detokenize(std::vector<int32_t>(text.begin() + static_cast<std::ptrdiff_t>(tokens->size()), text.end()), vocab);
  out_ << prompt << continuation << "\n" << std::flush;
  if (!o_.predictionsPath.empty()) {
    auto f = openOutputFile(o_.predictionsPath, false);
    if (!f) return fail(o_.predictionsPath + ": " + f.error().message());
    std::string all = prompt + continuation;
    if (std::fwrite(all.data(), 1, all.size(), f->get()) != all.size() || std::fflush(f->get()))
      return fail(o_.predictionsPath + ": write error: " + std::strerror(errno));
  }
  return RunStatus::Ok;
}

} // namespace dtnn::runtime::session
