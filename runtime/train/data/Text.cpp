// Text corpora and their token sequences. Characters are decoded from UTF-8 by hand, strictly
// (no overlong forms, no surrogates, nothing above U+10FFFF); a byte that does not start a
// valid sequence becomes the code point U+DC80 + byte, as Python's surrogateescape does, so
// that any file tokenizes and detokenizes back to its bytes.
#include "runtime/train/data/Text.h"

#include "ir/Files.h"
#include "runtime/HostMemory.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

namespace dtnn {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kEscape = 0xDC80; // U+DC80 + b stands for a byte b that is not UTF-8

// Reads a whole regular file.
Expected<std::string> readFile(const std::string &path) {
  uint64_t size = 0;
  Expected<FilePtr> f = openRegularFile(path, size, "data file");
  if (!f) return Error::make(path + ": " + f.error().message());
  std::string text(size_t(size), '\0');
  if (size && std::fread(text.data(), 1, text.size(), f->get()) != text.size())
    return Error::make(path + ": read error");
  return text;
}

// Decodes the character at text[i]: sets `cp` and returns its length in bytes (1 for a byte
// that is not UTF-8, whose code point is then kEscape + byte).
size_t decode(const std::string &text, size_t i, uint32_t &cp) {
  auto byte = [&](size_t k) { return uint8_t(text[k]); };
  uint8_t b = byte(i);
  cp = b;
  if (b < 0x80) return 1;
  // The length a lead byte announces; 0 for a byte that leads no sequence.
  size_t len = b < 0xC2 ? 0 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : b <= 0xF4 ? 4 : 0;
  uint32_t v = len == 2 ? b & 0x1F : len == 3 ? b & 0x0F : b & 0x07;
  bool ok = len > 0 && i + len <= text.size();
  for (size_t k = 1; ok && k < len; ++k) {
    ok = (byte(i + k) & 0xC0) == 0x80;
    v = (v << 6) | (byte(i + k) & 0x3F);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
  ok = ok && !(len == 3 && v < 0x800) && !(len == 4 && (v < 0x10000 || v > 0x10FFFF)) &&
       !(v >= 0xD800 && v < 0xE000);
  if (!ok) {
    cp = kEscape + b;
    return 1;
  }
  cp = v;
  return len;
}

// Appends code point cp to out in UTF-8; an escaped byte is the byte itself.
void encode(uint32_t cp, std::string &out) {
  if (cp >= kEscape + 0x80 && cp <= kEscape + 0xFF) {
    out += char(cp - kEscape);
  } else if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

// "'x' (U+0078)" for a message.
std::string describeChar(uint32_t cp) {
  char code[16];
  std::snprintf(code, sizeof code, "U+%04X", unsigned(cp));
  std::string shown;
  encode(cp, shown);
  return cp >= 0x20 && cp != 0x7F && cp < kEscape ? "'" + shown + "' (" + code + ")"
                                                   : std::string(code);
}

} // namespace

Expected<std::string> readTextCorpus(const std::string &path, std::vector<std::string> &files) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return Error::make(path + " does not exist");
  if (!fs::is_directory(st)) {
    files = {fs::path(path).filename().string()};
    return readFile(path);
  }
  std::vector<std::string> names;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    fs::file_status link = it->symlink_status(ec);
    if (ec || !fs::is_regular_file(link)) continue;
    names.push_back(name);
  }
  if (ec) return Error::make(path + ": cannot list the folder: " + ec.message());
  std::sort(names.begin(), names.end());
  std::string text;
  uint64_t memory = runtime::hostMemoryBytes();
  files.clear();
  for (const std::string &name : names) {
    Expected<std::string> t = readFile((fs::path(path) / name).string());
    if (!t) return t.takeError();
    if (std::memchr(t->data(), 0, t->size())) continue; // not text: an index, an image
    if (text.size() + t->size() > memory / 4)
      return Error::make(path + ": its text files up to " + name + " hold " +
                         runtime::formatBytes(text.size() + t->size()) +
                         ", too much to keep in memory four times over (" +
                         runtime::formatBytes(memory) + ")");
    text += *t;
    files.push_back(name);
  }
  if (files.empty() || text.empty())
    return Error::make(path + " holds no text files (regular files without NUL bytes)");
  return text;
}

Vocabulary makeVocabulary(const std::string &text, bool chars) {
  Vocabulary v;
  if (!chars) return v;
  std::set<uint32_t> seen;
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    i += decode(text, i, cp);
    seen.insert(cp);
  }
  v.chars.assign(seen.begin(), seen.end());
  return v;
}

Expected<std::vector<int32_t>> tokenize(const std::string &text, const Vocabulary &vocab,
                                        std::vector<uint8_t> *lengths) {
  std::vector<int32_t> tokens;
  tokens.reserve(text.size());
  if (lengths) lengths->clear();
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = uint8_t(text[i]);
    size_t len = vocab.bytes() ? 1 : decode(text, i, cp);
    int32_t token = int32_t(cp);
    if (!vocab.bytes()) {
      auto it = std::lower_bound(vocab.chars.begin(), vocab.chars.end(), cp);
      if (it == vocab.chars.end() || *it != cp)
        return Error::make("the character " + describeChar(cp) + " at byte " +
                           std::to_string(i) + " is not in the vocabulary of the " +
                           std::to_string(vocab.chars.size()) + " characters of the data set");
      token = int32_t(it - vocab.chars.begin());
    }
    tokens.push_back(token);
    if (lengths) lengths->push_back(uint8_t(len));
    i += len;
  }
  return tokens;
}

std::string detokenize(const std::vector<int32_t> &tokens, const Vocabulary &vocab) {
  std::string text;
  for (int32_t t : tokens) {
    if (vocab.bytes()) text += char(uint8_t(t));
    else if (t >= 0 && size_t(t) < vocab.chars.size()) encode(vocab.chars[size_t(t)], text);
  }
  return text;
}

Dataset makeSequences(const std::vector<int32_t> &tokens, const std::vector<uint8_t> &lengths,
                      int64_t seqLen, bool pad, const Vocabulary &vocab, int32_t ignoreIndex) {
  Dataset d;
  d.tokenSamples = true;
  d.noun = "sequences";
  d.sampleShape = {seqLen};
  d.labelsPerSample = seqLen;
  d.numClasses = vocab.bytes() ? 256 : int32_t(vocab.chars.size());
  d.ignoreIndex = ignoreIndex;
  d.vocab = vocab;
  int64_t labels = std::max<int64_t>(int64_t(tokens.size()) - 1, 0);
  d.count = pad ? (labels + seqLen - 1) / seqLen : labels / seqLen;
  d.tokens.assign(size_t(d.count * seqLen), 0);
  d.labels.assign(size_t(d.count * seqLen), ignoreIndex);
  uint64_t bytes = 0, counted = 0;
  for (int64_t i = 0; i < d.count; ++i)
    for (int64_t j = 0; j < seqLen; ++j) {
      int64_t at = i * seqLen + j;
      if (at >= labels) break;
      d.tokens[size_t(at)] = tokens[size_t(at)];
      d.labels[size_t(at)] = tokens[size_t(at + 1)];
      bytes += lengths[size_t(at + 1)];
      ++counted;
    }
  d.bytesPerLabel = counted ? double(bytes) / double(counted) : 1.0;
  return d;
}

} // namespace dtnn
