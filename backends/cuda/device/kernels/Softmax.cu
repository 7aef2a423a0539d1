// The Softmax family's CUDA kernels (placeholder until they land).
#include <cuda_runtime.h>
