// Text for language models: a corpus read from text files, tokenized into bytes or Unicode
// characters, and cut into fixed-length training sequences whose labels are the next tokens.
#pragma once

#include "ir/Error.h"
#include "runtime/train/data/Dataset.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dtnn {

// The text of `path`: a file, or the text files of a folder joined in name order (regular
// files only, not symbolic links, hidden files or subfolders, and no file holding a NUL
// byte, such as the strfile indexes `*.dat` beside fortunes' files). `files` receives the
// names read. Fails naming the path when there is no text.
Expected<std::string> readTextCorpus(const std::string &path, std::vector<std::string> &files);

// The vocabulary of `text`: its distinct characters, in code point order (`chars`), or the 256
// byte values (`bytes`).
Vocabulary makeVocabulary(const std::string &text, bool chars);

// The tokens of `text` under `vocab`, and in `lengths` (when given) the bytes each token spans.
// Fails naming the first character that `vocab` lacks.
Expected<std::vector<int32_t>> tokenize(const std::string &text, const Vocabulary &vocab,
                                        std::vector<uint8_t> *lengths = nullptr);

// The text of `tokens` under `vocab`: the bytes themselves, or each character in UTF-8 (a byte
// that was not UTF-8 comes back as itself).
std::string detokenize(const std::vector<int32_t> &tokens, const Vocabulary &vocab);

// Sequences of `seqLen` tokens from `tokens` (with `lengths`, the bytes each spans), cut at
// stride seqLen: sample i takes tokens [i*seqLen, (i+1)*seqLen) as its input and the tokens one
// further on as its labels. `pad` keeps a last, shorter sequence, padded with token 0 and the
// label `ignoreIndex`, so that every token after the first is a label once; without it the
// last tokens that do not fill a sequence are left out.
Dataset makeSequences(const std::vector<int32_t> &tokens, const std::vector<uint8_t> &lengths,
                      int64_t seqLen, bool pad, const Vocabulary &vocab, int32_t ignoreIndex);

} // namespace dtnn
