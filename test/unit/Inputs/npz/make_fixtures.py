#!/usr/bin/python3
# Remakes the tiny .npz files that NpzTest reads: run it in this folder (python3 and numpy).
import numpy as np

x = (np.arange(4 * 3 * 5 * 5) % 251).astype(np.uint8).reshape(4, 3, 5, 5)
y = np.array([3, 0, 9, 7], dtype=np.int64)
np.savez("stored.npz", x=x, y=y)
np.savez_compressed("deflated.npz", x=x, y=y)
np.savez_compressed("onehot.npz", y=np.eye(10, dtype=np.float32)[y])
np.savez("fortran.npz", a=np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)))
np.savez("bigendian.npz", a=np.arange(3, dtype=">i4"))
np.savez("object.npz", a=np.array([1, "two", None], dtype=object))
