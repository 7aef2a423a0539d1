// Checkpoints of a run: their paths and folder, writing the training state, and
// the checkpoint written when a signal interrupts the run.
#include "runtime/train/Session.h"
#include "ir/Diagnostics.h"

#include "ir/Files.h"
#include "ir/Output.h"
#include "runtime/DeclaredWork.h"
#include "runtime/comm/Elastic.h"
#include "runtime/train/Interrupt.h"

#include <filesystem>
#include <map>

namespace dtnn::runtime::session {

std::string Session::periodicPath(int64_t epoch) const {
  namespace fs = std::filesystem;
  fs::path base = o_.savePath.empty() ? fs::path(fwd_->name() + ".safetensors") : fs::path(o_.savePath);
  fs::path ext = base.extension().empty() ? fs::path(".safetensors") : base.extension();
  return (base.parent_path() / base.stem()).string() + ".epoch" + std::to_string(epoch) +
         ext.string();
}

Error Session::checkSaveFolder() const {
  if (!leader()) return Error::success(); // the one that writes
  // The longest periodic name is the last epoch's.
  for (const std::string &path : {o_.savePath, s_.checkpointEvery > 0 ? periodicPath(s_.epochs) : ""})
    if (!path.empty())
      if (Error e = checkOutput(path)) return Error::make(e.message() + " (checked before training)");
  return Error::success();
}

Error Session::checkOutputsAreNoInputs() const {
  if (!leader()) return Error::success(); // the one that writes
  std::vector<std::pair<std::string, std::string>> outputs = o_.outputs;
  // The periodic checkpoints this run writes: from the first epoch after the one it resumes
  // (whose checkpoint it may read) to the last.
  if (s_.checkpointEvery > 0) {
    std::string flag = "checkpoint_every";
    int64_t first = (progress_.epoch / s_.checkpointEvery + 1) * s_.checkpointEvery;
    if (first <= s_.epochs) outputs.emplace_back(flag, periodicPath(first));
    outputs.emplace_back(flag, periodicPath(s_.epochs));
  }
  for (const auto &[flag, path] : outputs)
    if (std::string input = inputAt(path); !input.empty())
      return Error::make(flag + " '" + path + "' would overwrite " + input +
                         ", which this run reads");
  return Error::success();
}

std::string classList(const std::vector<std::string> &names) {
  std::string list;
  for (const std::string &n : names) {
    // Names stored must be valid UTF-8 without line breaks; a folder name may be neither.
    for (size_t i = 0; i < n.size();) {
      size_t len = utf8SequenceLength(n, i);
      if (len == 0 || n[i] == '\n') return "";
      i += len;
    }
    list += (list.empty() ? "" : "\n") + n;
  }
  return list;
}

Error Session::saveState(const std::string &path) {
  if (!leader()) return Error::success();
  DeclaredWork writing("writing the checkpoint '" + path + "'");
  StopContext stopping(", while writing the checkpoint '" + path + "': it was not written, and "
                       "an earlier file of that name is unchanged");
  std::map<std::string, std::string> meta = {{"seed", std::to_string(s_.seed)},
                                             {"optimizer", s_.optimizer.name},
                                             {"loss", s_.loss.name},
                                             {"batch", std::to_string(s_.batch)},
                                             {"train_samples", std::to_string(trainIdx_.size())}};
  for (const auto &[k, v] : schedule_->state()) meta["schedule." + k] = v;
  // The class map, so that predictions name the classes: one name a line, in label order.
  if (std::string names = classList(data_.train.classNames); !names.empty()) meta["classes"] = names;
  if (early_)
    for (const auto &[k, v] : early_->state()) meta["early_stopping." + k] = v;
  double started = monotonicSeconds();
  Error e = saveTrainState(path, fwd_->name(), runner_->params(), progress_, meta);
  if (trace_) trace_->addSpan(RunTrace::kRun, "checkpoint " + path, "checkpoint", started,
                              monotonicSeconds());
  if (!e) elastic::reportCheckpoint(path, progress_.step);
  return e;
}

RunStatus Session::interrupted(const StopRequest &stop) {
  bar_.clear();
  out_ << std::flush;
  std::string where = (progress_.stepInEpoch == 0
                           ? "after epoch " + std::to_string(progress_.epoch)
                           : "at epoch " + std::to_string(progress_.epoch + 1) + ", step " +
                                 std::to_string(progress_.stepInEpoch)) +
                      " (global step " + std::to_string(progress_.step) + ")";
  std::string what = "no --save was given, so no checkpoint is written";
  if (!o_.savePath.empty()) {
    // Rank 0 writes; every rank learns whether it could, so that none ends the job early.
    Error e = saveState(o_.savePath);
    int32_t written = e ? 0 : 1;
    if (ranks() > 1)
      if (Error b = comm_.broadcast(&written, sizeof written, 0,
                                    "sharing whether the checkpoint was written"))
        return fail(b.message());
    what = written ? "wrote the checkpoint " + o_.savePath + "; --resume " + o_.savePath +
                         " continues it"
                   : "the checkpoint was not written: " +
                         (e ? e.message() : "rank 0 could not write " + o_.savePath);
  }
  std::string by = signalName(stop.signal);
  if (ranks() > 1) by += " (sent to " + stop.ranks() + ")";
  if (leader())
    err_ << "dtnn-run: error: interrupted by " << by << " " << where << "; " << what << "\n"
         << std::flush;
  return static_cast<RunStatus>(128 + stop.signal);
}

} // namespace dtnn::runtime::session
