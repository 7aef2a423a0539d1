// The plain batch normalization kernels of Norm.cpp that SyncNorm.cpp's
// kernels fall back to when sync=false.
#pragma once

#include "backends/reference/KernelTable.h"

namespace dtnn::reference {

template <typename T> void batchNormTrainKernel(const KernelArgs &a);
template <typename T> void batchNormBackwardKernel(const KernelArgs &a);

} // namespace dtnn::reference
