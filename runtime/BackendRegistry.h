// The backend registry: the backends of this build by name, open to
// extensions, each registered with its kernels by its own registration
// function (registerReferenceBackend, registerOnednnBackend) through
// registerBackend; and the set of backends a run plans with: the one the user
// chose, then the fallbacks (the reference backend, which has a kernel for
// every op).
#pragma once

#include "ir/Error.h"
#include "runtime/Backend.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dtnn::runtime {

struct BackendEntry {
  std::string name;
  // The default backend is the one with the highest priority.
  int priority = 0;
  // Planned after the chosen backend in every run, for the ops it lacks.
  bool fallback = false;
  std::string summary;
  std::function<std::unique_ptr<Backend>(const BackendOptions &)> create;
  // Optional: the buffer of another type in the same arrangement as `like`,
  // one of this backend's layouts (the same tag: a per-channel tensor in
  // the blocked layout of the activations), for kernels of other backends
  // that read such a tensor in place.
  std::function<Expected<BufferDesc>(const BufferDesc &like, const ir::TensorType &type)>
      layoutLike;
  std::string origin = "built-in"; // who registered it, for messages
  // Optional, for backends of a device: whether this machine has one it can
  // run on (`backend = auto` takes the first that does).
  std::function<bool()> available;
};

class BackendRegistry {
public:
  static BackendRegistry &get();
  // Adds a backend; a name registered twice fails, naming both registrants.
  Error add(BackendEntry e);
  // Names, the default first (by priority, then name).
  std::vector<std::string> names() const;
  const BackendEntry *find(const std::string &name) const;

private:
  std::vector<BackendEntry> entries_;
};

// Adds a backend to the process-wide registry (BackendRegistry::get().add).
Error registerBackend(BackendEntry e);

// The buffer of `type` arranged as `like` (see BackendEntry::layoutLike): the
// plain buffer when `like` is plain; fails when the layout's owner cannot
// arrange that type.
Expected<BufferDesc> layoutLike(const BufferDesc &like, const ir::TensorType &type);

// The backends one run plans with, in the order kernel selection asks them:
// the chosen backend, then each fallback.
class BackendSet {
public:
  // Creates the backend named `name` (empty: the default; "auto": the first
  // device backend with a device here, else the default) and the fallbacks,
  // sets the thread count, and starts each backend unless opts.planOnly; an
  // unknown name gets an error listing the known ones, a backend that cannot
  // start says why.
  static Expected<BackendSet> create(const std::string &name, const BackendOptions &opts);
  // The error create() gives for a name no backend has, or success.
  static Error checkName(const std::string &name);
  // The names of the backends create() would make, in kernel selection's order.
  static Expected<std::vector<std::string>> order(const std::string &name);

  // The chosen backend: it holds the parameters, the input buffers and the
  // outputs, in its memory space.
  Backend &primary() const { return *all_.front(); }
  // The backend whose memory holds values of space `s` (the first of that
  // space); the host's comes from the device backend's pinned memory when
  // the run has one (Backend::allocateHost). Null when none.
  Backend *owner(MemorySpace s) const;
  // The device backend of the run, or null.
  Backend *device() const { return owner(MemorySpace::Device); }
  const std::vector<std::unique_ptr<Backend>> &all() const { return all_; }
  Backend *find(std::string_view name) const;
  // "onednn, reference"
  std::string namesText() const;

private:
  std::vector<std::unique_ptr<Backend>> all_;
};

} // namespace dtnn::runtime
