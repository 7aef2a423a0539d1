// The losses and accuracy on the device, as the reference evaluates them
// (backends/reference/Loss.cpp): every sum in double, from the operands'
// values converted exactly, rounded to the element type once at the end.
//   softmax_cross_entropy           mean over the counted rows of lse - (x[label] - m), m the row's
//                                   maximum and lse = log(sum(exp(x - m)));
//   softmax_cross_entropy_backward  dx = (exp(x - m - lse) - onehot(label)) * dy / counted;
//   nll_loss                        -mean over the counted rows of x[label];
//   nll_loss_backward               dx = -dy / counted at each counted row's label, 0 elsewhere;
//   accuracy                        the share of counted rows with fewer than k classes ranking
//                                   before their label (a higher score, an equal one at a lower
//                                   class, or NaN), a NaN label score being a miss;
//   mse_loss, mse_loss_backward     mean((p - t)^2), dx = T(2 dy / n) * (p - t);
//   bce_loss, bce_loss_backward     mean((t - 1) max(log1p(-p), -100) - t max(log p, -100)),
//                                   dx = dy / n * (p - t) / max((1 - p) p, 1e-12).
// The classifiers' rows (scores [rows, classes], i32 labels [rows]) leave out
// those labelled `ignore`: counted is the number of the others, at least 1.
// Any other label outside [0, classes) makes its row's loss and gradient
// NaN and is a miss for accuracy. A warp takes each row, its lanes the
// classes l, l + 32, ..; a row's value goes to the workspace and one block
// adds the rows' values (or the elementwise losses' segments, split as
// ReduceSplit.h says) in a fixed order and divides: every run gives the
// same bits. The backward ops count the rows first, into the workspace.
#pragma once

#include "backends/cuda/device/kernels/ReduceSplit.h"

#include <cstdint>
#include <cuda_runtime.h>

namespace dtnn::cuda {

struct ClassifierShape {
  int64_t rows = 0, classes = 1, ignore = -100;
};

// `rowLoss`: a double per row.
template <typename T>
cudaError_t launchSoftmaxCrossEntropy(const T *x, const int32_t *label, T *loss, double *rowLoss,
                                      const ClassifierShape &s, cudaStream_t stream);
// `counted`: one double.
template <typename T>
cudaError_t launchSoftmaxCrossEntropyBackward(const T *dy, const T *x, const int32_t *label, T *dx,
                                              double *counted, const ClassifierShape &s, cudaStream_t stream);
template <typename T>
cudaError_t launchNllLoss(const T *x, const int32_t *label, T *loss, const ClassifierShape &s,
                          cudaStream_t stream);
// `counted`: one double.
template <typename T>
cudaError_t launchNllLossBackward(const T *dy, const int32_t *label, T *dx, double *counted,
                                  const ClassifierShape &s, cudaStream_t stream);
// `rowHit`: a double per row.
template <typename T>
cudaError_t launchAccuracy(const T *x, const int32_t *label, T *accuracy, double *rowHit,
                           const ClassifierShape &s, int64_t k, cudaStream_t stream);

// `partial`: a double per segment of elementSplit(n).
template <typename T>
cudaError_t launchMseLoss(const T *p, const T *t, T *loss, double *partial, int64_t n, cudaStream_t stream);
template <typename T>
cudaError_t launchMseLossBackward(const T *dy, const T *p, const T *t, T *dx, int64_t n, cudaStream_t stream);
template <typename T>
cudaError_t launchBceLoss(const T *p, const T *t, T *loss, double *partial, int64_t n, cudaStream_t stream);
template <typename T>
cudaError_t launchBceLossBackward(const T *dy, const T *p, const T *t, T *dx, int64_t n, cudaStream_t stream);

} // namespace dtnn::cuda
