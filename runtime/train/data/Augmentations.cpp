// The built-in augmentations and their registry (see Augmentations.h).
#include "runtime/train/data/Augmentations.h"

#include "ir/Registry.h"
#include "ir/SettingChoices.h"

namespace dtnn {
namespace {

ir::Registry<AugmentDef> &registry() {
  static ir::Registry<AugmentDef> augmentations("augmentation");
  return augmentations;
}

template <typename T> T arg(const ir::AttrMap &args, const std::string &name, T def) {
  const ir::AttrValue *v = args.find(name);
  return v ? std::get<T>(*v) : def;
}

// Reads a flip probability argument `name`.
Expected<double> probability(const std::string &what, const ir::AttrMap &args,
                             const std::string &name, double def) {
  double p = arg<double>(args, name, def);
  if (!(p >= 0 && p <= 1))
    return Error::make(what + ": '" + name + "' must be a probability in [0, 1], got " +
                       ir::attrValueStr(p));
  return p;
}

// Reads a [lo, hi] pair argument with 0 < lo <= hi.
Error pair(const std::string &what, const ir::AttrMap &args, const std::string &name,
           double out[2]) {
  const ir::AttrValue *v = args.find(name);
  if (!v) return Error::success();
  const auto &list = std::get<std::vector<double>>(*v);
  if (list.size() != 2 || !(list[0] > 0) || !(list[0] <= list[1]))
    return Error::make(what + ": '" + name + "' must be [lo, hi] with 0 < lo <= hi, got " +
                       ir::attrValueStr(list));
  out[0] = list[0];
  out[1] = list[1];
  return Error::success();
}

Expected<ImageTransform> makeFlip(const ir::AttrMap &args, const ImageTransform &eval, bool) {
  ImageTransform t = eval;
  Expected<double> p = probability("flip", args, "p", 0.5);
  if (!p) return p.takeError();
  t.flip = *p;
  return t;
}

Expected<ImageTransform> makeCropFlip(const ir::AttrMap &args, const ImageTransform &eval,
                                      bool files) {
  if (files)
    return Error::make("crop_flip crops images of the model's size held in memory (IDX, "
                       "CIFAR-10); image files take random_resized_crop");
  ImageTransform t = eval;
  Expected<double> p = probability("crop_flip", args, "p", 0.5);
  if (!p) return p.takeError();
  int64_t pad = arg<int64_t>(args, "pad", 4);
  if (pad < 0 || pad > 4096)
    return Error::make("crop_flip: 'pad' must be in 0..4096, got " + std::to_string(pad));
  t.crop = ImageTransform::Crop::PadRandom;
  t.pad = pad;
  t.flip = *p;
  return t;
}

Expected<ImageTransform> makeRandomResizedCrop(const ir::AttrMap &args,
                                               const ImageTransform &eval, bool files) {
  if (!files)
    return Error::make("random_resized_crop crops image files of any size (image_folder, "
                       "imagenet); images of the model's size held in memory take crop_flip");
  ImageTransform t = eval;
  const std::string what = "random_resized_crop";
  if (Error e = pair(what, args, "scale", t.scale)) return e;
  if (t.scale[1] > 1)
    return Error::make(what + ": 'scale' is a fraction of the image's area, at most 1, got " +
                       ir::attrValueStr(std::vector<double>{t.scale[0], t.scale[1]}));
  if (Error e = pair(what, args, "ratio", t.ratio)) return e;
  Expected<double> p = probability(what, args, "p", 0.5);
  if (!p) return p.takeError();
  t.crop = ImageTransform::Crop::RandomResized;
  t.flip = *p;
  return t;
}

} // namespace

Error registerAugmentation(AugmentDef def, const std::string &origin) {
  if (!def.make) return Error::make("augmentation '" + def.name + "' of " + origin + " makes nothing");
  ir::SettingChoice choice{def.name, def.args, def.summary, def.isDefault};
  return ir::registerChoiceEntry(registry(), "augment", std::move(choice), std::move(def), origin);
}

Error registerBuiltinAugmentations() {
  static bool done = false;
  if (done) return Error::success();
  done = true;
  using K = ir::AttrKind;
  std::vector<AugmentDef> all = {
      {"none", {}, "samples as evaluation sees them (image files resized and centre-cropped)",
       [](const ir::AttrMap &, const ImageTransform &eval, bool) -> Expected<ImageTransform> {
         return eval;
       },
       true},
      {"flip", {{"p", K::Float}}, "a horizontal flip with probability p (0.5)", makeFlip},
      {"crop_flip", {{"pad", K::Int}, {"p", K::Float}},
       "the CIFAR recipe: a random crop of the image padded by pad (4) zeros, and a flip with "
       "probability p (0.5)",
       makeCropFlip},
      {"random_resized_crop", {{"scale", K::Floats}, {"ratio", K::Floats}, {"p", K::Float}},
       "the ImageNet recipe: a random box of scale ([0.08, 1]) of the area and aspect ratio "
       "([3/4, 4/3]) resized to the model's size, and a flip with probability p (0.5)",
       makeRandomResizedCrop},
  };
  for (AugmentDef &d : all)
    if (Error e = registerAugmentation(std::move(d), ir::kBuiltinOrigin)) return e;
  return Error::success();
}

Expected<ImageTransform> makeTrainTransform(const ir::SettingCall &spec, const ImageTransform &eval,
                                            bool files) {
  const ir::RunSettingDef &setting = *ir::findRunSetting("augment");
  std::string name = spec.name.empty() ? ir::defaultSettingChoice("augment") : spec.name;
  const AugmentDef *def = registry().find(name);
  if (!def) {
    Error e = ir::checkSettingChoice(setting, name);
    return e ? std::move(e) : Error::make("augmentation '" + name + "' makes nothing");
  }
  Expected<ir::AttrMap> checked = ir::checkSettingArgs(setting, name, spec.args);
  if (!checked) return checked.takeError();
  return def->make(*checked, eval, files);
}

} // namespace dtnn
