// Checkpoints of a run: their paths and folder, writing the training state, and
// the checkpoint written when a signal interrupts the run.
#include "runtime/Session.h"

#include "runtime/AtomicFile.h"
#include "runtime/Interrupt.h"

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
  namespace fs = std::filesystem;
  if (!leader() || (o_.savePath.empty() && s_.checkpointEvery == 0)) return Error::success();
  fs::path folder = fs::path(periodicPath(1)).parent_path();
  if (folder.empty()) folder = ".";
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    return Error::make("cannot write checkpoints to '" + folder.string() +
                       "': no such folder (checked before training)");
  if (!o_.savePath.empty() && fs::exists(o_.savePath, ec) &&
      !fs::is_regular_file(o_.savePath, ec))
    return Error::make("cannot write a checkpoint to '" + o_.savePath +
                       "': not a regular file (checked before training)");
  // The longest periodic name is the last epoch's.
  for (const std::string &path : {o_.savePath, s_.checkpointEvery > 0 ? periodicPath(s_.epochs) : ""})
    if (!path.empty())
      if (Error e = checkWritableAtomically(path))
        return Error::make("cannot write a checkpoint: " + e.message() + " (checked before training)");
  return Error::success();
}

Error Session::saveState(const std::string &path) {
  if (!leader()) return Error::success();
  std::map<std::string, std::string> meta = {{"seed", std::to_string(s_.seed)},
                                             {"optimizer", s_.optimizer.name},
                                             {"loss", s_.loss.name},
                                             {"batch", std::to_string(s_.batch)},
                                             {"train_samples", std::to_string(trainIdx_.size())}};
  for (const auto &[k, v] : schedule_->state()) meta["schedule." + k] = v;
  if (early_)
    for (const auto &[k, v] : early_->state()) meta["early_stopping." + k] = v;
  return saveTrainState(path, fwd_->name(), runner_->params(), progress_, meta);
}

RunStatus Session::interrupted(int sig) {
  bar_.clear();
  std::string where = (progress_.stepInEpoch == 0
                           ? "after epoch " + std::to_string(progress_.epoch)
                           : "at epoch " + std::to_string(progress_.epoch + 1) + ", step " +
                                 std::to_string(progress_.stepInEpoch)) +
                      " (global step " + std::to_string(progress_.step) + ")";
  std::string what = "no --save was given, so no checkpoint is written";
  if (!o_.savePath.empty()) {
    if (Error e = saveState(o_.savePath)) return fail(e.message());
    what = "wrote the checkpoint " + o_.savePath + "; --resume " + o_.savePath + " continues it";
  }
  return fail(std::string("interrupted by ") + signalName(sig) + " " + where + "; " + what,
              static_cast<RunStatus>(128 + sig));
}

} // namespace dtnn::runtime::session
