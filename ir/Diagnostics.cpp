#include "ir/Diagnostics.h"

#include <algorithm>

namespace dtnn {

const std::string &SourceManager::add(const std::string &name, std::string text) {
  auto buf = std::make_unique<Buffer>();
  buf->text = std::move(text);
  buf->lineStarts.push_back(0);
  for (size_t i = 0; i < buf->text.size(); ++i)
    if (buf->text[i] == '\n') buf->lineStarts.push_back(i + 1);
  auto &slot = buffers_[name];
  slot = std::move(buf);
  return slot->text;
}

std::string SourceManager::lineText(const std::string &file, uint32_t line) const {
  auto it = buffers_.find(file);
  if (it == buffers_.end() || line == 0 || line > it->second->lineStarts.size()) return "";
  const Buffer &b = *it->second;
  size_t begin = b.lineStarts[line - 1];
  size_t end = b.text.find('\n', begin);
  if (end == std::string::npos) end = b.text.size();
  if (end > begin && b.text[end - 1] == '\r') --end;
  return b.text.substr(begin, end - begin);
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

// Makes a source line safe and short enough to print: control bytes become
// spaces (so the caret still lines up) and very long lines are cut around
// the column of interest. Returns the caret column within the shown text.
size_t printableLine(std::string &text, uint32_t col) {
  const size_t kWidth = 160;
  size_t caret = col == 0 ? 0 : col - 1;
  if (text.size() > kWidth) {
    size_t start = caret > kWidth / 2 ? caret - kWidth / 2 : 0;
    start = std::min(start, text.size() - std::min(text.size(), kWidth));
    text = text.substr(start, kWidth);
    caret -= std::min(caret, start);
  }
  for (char &c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\t') c = ' ';
    if (u == 0x7f) c = ' ';
  }
  return std::min(caret, text.size());
}

} // namespace

void DiagnosticEngine::print(const Diagnostic &d) {
  if (d.loc.known())
    os_ << d.loc.file << ':' << d.loc.line << ':' << d.loc.col << ": ";
  else if (!d.loc.file.empty())
    os_ << d.loc.file << ": ";
  os_ << severityName(d.severity) << ": " << d.message << '\n';
  if (d.loc.known()) {
    std::string text = sm_.lineText(d.loc.file, d.loc.line);
    if (!text.empty()) {
      size_t caret = printableLine(text, d.loc.col);
      std::string pad;
      for (size_t i = 0; i < caret; ++i) pad += text[i] == '\t' ? '\t' : ' ';
      os_ << text << '\n' << pad << "^\n";
    }
  }
  for (const Diagnostic &n : d.notes) print(n);
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
    // Levenshtein distance with two rows.
    std::vector<size_t> prev(c.size() + 1), cur(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= name.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= c.size(); ++j) {
        size_t sub = prev[j - 1] + (name[i - 1] == c[j - 1] ? 0 : 1);
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      }
      std::swap(prev, cur);
    }
    if (prev[c.size()] < bestDist) {
      bestDist = prev[c.size()];
      best = c;
    }
  }
  return best;
}

} // namespace dtnn
