// Choosing a language model's next token from its logits: greedy, or a draw from the softmax
// at a temperature over the k most likely tokens, as nanoGPT's and Hugging Face's samplers do.
#pragma once

#include "runtime/Random.h"

#include <cstdint>

namespace dtnn::runtime {

struct SamplingOptions {
  double temperature = 1.0; // 0: always the most likely token
  int64_t topK = 0;         // draw among the k most likely tokens; 0: among all
};

// The next token after `logits` [vocab]: the most likely one at temperature 0 (the lowest index
// of a tie), else a draw from softmax(logits / temperature) restricted to the topK largest
// logits (ties broken by index), using one uniform of `rng`. NaN logits are never chosen.
int32_t sampleToken(const float *logits, int64_t vocab, const SamplingOptions &opts,
                    Random &rng);

} // namespace dtnn::runtime
