#include "ir/Diagnostics.h"

#include <algorithm>
#include <vector>

namespace dtnn {

std::vector<std::string_view> SourceManager::texts() const {
  std::vector<std::string_view> out;
  for (const auto &[name, buf] : buffers_) out.push_back(buf->text);
  return out;
}

const std::string &SourceManager::add(const std::string &name, std::string text) {
  auto buf = std::make_unique<Buffer>();
  buf->text = std::move(text);
  buf->strideStarts.push_back(0);
  buf->lines = 1;
  for (size_t i = 0; i < buf->text.size(); ++i) {
    if (buf->text[i] != '\n') continue;
    if (buf->lines++ % kLineStride == 0) buf->strideStarts.push_back(i + 1);
  }
  auto &slot = buffers_[name];
  slot = std::move(buf);
  return slot->text;
}

std::string SourceManager::lineText(const std::string &file, uint32_t line) const {
  auto it = buffers_.find(file);
  if (it == buffers_.end() || line == 0 || line > it->second->lines) return "";
  const Buffer &b = *it->second;
  size_t begin = b.strideStarts[(line - 1) / kLineStride];
  for (uint32_t l = (line - 1) / kLineStride * kLineStride + 1; l < line; ++l)
    begin = b.text.find('\n', begin) + 1;
  size_t end = b.text.find('\n', begin);
  if (end == std::string::npos) end = b.text.size();
  if (end > begin && b.text[end - 1] == '\r') --end;
  return b.text.substr(begin, end - begin);
}

size_t utf8SequenceLength(const std::string &s, size_t i) {
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned char c = at(0);
  if (c < 0x80) return 1;
  size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  // The second byte's range depends on the first (RFC 3629).
  unsigned char lo = 0x80, hi = 0xbf;
  if (c == 0xe0) lo = 0xa0;
  if (c == 0xed) hi = 0x9f;
  if (c == 0xf0) lo = 0x90;
  if (c == 0xf4) hi = 0x8f;
  if (at(1) < lo || at(1) > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if ((at(k) & 0xc0) != 0x80) return 0;
  return len;
}

namespace {

const char *severityName(Severity s) {
  switch (s) {
  case Severity::Error: return "error";
  case Severity::Warning: return "warning";
  case Severity::Note: return "note";
  }
  return "error";
}

// Makes a source line safe and short enough to print. Works on code points,
// as columns count them: control characters become spaces, bytes that are
// not valid UTF-8 become '?', and very long lines are cut around the column
// of interest. Returns the text and the caret's indent.
std::pair<std::string, std::string> printableLine(const std::string &line, uint32_t col) {
  const size_t kWidth = 160;
  std::vector<std::string> cps; // one entry per code point
  for (size_t i = 0; i < line.size();) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    size_t len = utf8SequenceLength(line, i);
    if (len == 0) {
      cps.push_back("?");
      ++i;
      continue;
    }
    std::string cp = line.substr(i, len);
    if (len == 1 && ((c < 0x20 && c != '\t') || c == 0x7f)) cp = " ";
    cps.push_back(cp);
    i += len;
  }
  size_t caret = col == 0 ? 0 : std::min<size_t>(col - 1, cps.size());
  size_t start = 0;
  if (cps.size() > kWidth) {
    start = caret > kWidth / 2 ? caret - kWidth / 2 : 0;
    start = std::min(start, cps.size() - kWidth);
  }
  size_t stop = std::min(cps.size(), start + kWidth);
  std::string text, pad;
  for (size_t i = start; i < stop; ++i) text += cps[i];
  for (size_t i = start; i < caret; ++i) pad += cps[i] == "\t" ? '\t' : ' ';
  return {text, pad};
}

} // namespace

void DiagnosticEngine::print(const Diagnostic &d) {
  if (d.loc.known())
    os_ << d.loc.file << ':' << d.loc.line << ':' << d.loc.col << ": ";
  else if (!d.loc.file.empty())
    os_ << d.loc.file << ": ";
  // Names echoed from hostile input can be megabytes long.
  const size_t kMaxMessage = 480;
  os_ << severityName(d.severity) << ": "
      << (d.message.size() <= kMaxMessage ? d.message : d.message.substr(0, kMaxMessage) + "...")
      << '\n';
  if (d.loc.known()) {
    std::string line = sm_.lineText(d.loc.file, d.loc.line);
    if (!line.empty()) {
      auto [text, pad] = printableLine(line, d.loc.col);
      os_ << text << '\n' << pad << "^\n";
    }
  }
  for (const Diagnostic &n : d.notes) print(n);
}

void DiagnosticEngine::report(const Error &e) {
  Diagnostic d{Severity::Error, e.loc(), e.message(), {}};
  for (const ErrorNote &n : e.notes()) d.note(n.loc, n.message);
  report(d);
}

void DiagnosticEngine::report(const Diagnostic &d) {
  if (d.severity == Severity::Error) {
    if (errors_ >= maxErrors_) {
      if (!limitAnnounced_) {
        os_ << "error: too many errors emitted, stopping now\n";
        limitAnnounced_ = true;
      }
      ++errors_;
      return;
    }
    ++errors_;
  }
  print(d);
}

std::string closestMatch(const std::string &name, const std::vector<std::string> &candidates) {
  if (name.size() > 64) return "";
  std::string best;
  size_t bestDist = std::max<size_t>(1, name.size() / 3) + 1;
  for (const std::string &c : candidates) {
    if (c.size() > 64) continue;
    // Edit distance where swapping two adjacent characters counts as one edit.
    std::vector<size_t> prev2(c.size() + 1), prev(c.size() + 1), cur(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= name.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= c.size(); ++j) {
        size_t sub = prev[j - 1] + (name[i - 1] == c[j - 1] ? 0 : 1);
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
        if (i > 1 && j > 1 && name[i - 1] == c[j - 2] && name[i - 2] == c[j - 1])
          cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
      prev2 = prev;
      std::swap(prev, cur);
    }
    // Names of one or two letters only match by adding or dropping a letter.
    bool plausible = name.size() >= 3 || (prev[c.size()] == 1 && c.size() != name.size());
    if (plausible && prev[c.size()] < bestDist) {
      bestDist = prev[c.size()];
      best = c;
    }
  }
  return best;
}

} // namespace dtnn
