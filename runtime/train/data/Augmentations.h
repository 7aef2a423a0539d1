// The choices of the `augment` setting, an open registry like the data sources': each makes the
// transform of training samples from the one evaluation uses (the sample as it is, or for
// image files a resize and centre crop to the model's size). Built in: none, flip,
// crop_flip (the CIFAR recipe) and random_resized_crop (the ImageNet recipe).
#pragma once

#include "ir/Error.h"
#include "ir/RunSettings.h"
#include "runtime/train/data/Augment.h"

#include <functional>
#include <string>
#include <vector>

namespace dtnn {

// Makes the training transform from the evaluation transform `eval`; `files` says whether the
// samples are image files (decoded, any size) or images of the model's size held in memory. The
// arguments are of the kinds the registration declares.
using AugmentFn = std::function<Expected<ImageTransform>(const ir::AttrMap &args,
                                                         const ImageTransform &eval, bool files)>;

struct AugmentDef {
  std::string name;
  std::vector<ir::ChoiceArg> args;
  std::string summary;
  AugmentFn make;
  bool isDefault = false;
};

// Registers an augmentation; fails when the name is taken.
Error registerAugmentation(AugmentDef def, const std::string &origin);

// Registers the built-in augmentations (once; later calls do nothing).
Error registerBuiltinAugmentations();

// The training transform that `spec` (the augment setting) makes of `eval`. Errors name the
// augmentation and the argument.
Expected<ImageTransform> makeTrainTransform(const ir::SettingCall &spec, const ImageTransform &eval,
                                            bool files);

} // namespace dtnn
