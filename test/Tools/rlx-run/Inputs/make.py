"""Writes the .npy and safetensors inputs of the rlx-run tests into argv[1]."""
import os
import sys

import numpy as np

d = sys.argv[1]
os.makedirs(d, exist_ok=True)
np.save(f"{d}/x.npy", np.arange(12, dtype=np.float32).reshape(1, 3, 4))
np.save(f"{d}/x_bad_shape.npy", np.zeros((1, 3, 5), np.float32))
np.save(f"{d}/x_int.npy", np.zeros((1, 3, 4), np.int32))
np.save(f"{d}/w.npy", np.array([1, 2, 3, 4], np.float32))
np.save(f"{d}/w_bad.npy", np.array([1, 2, 3], np.float32))
np.save(f"{d}/fortran.npy", np.asfortranarray(np.zeros((3, 4), np.float32)))
with open(f"{d}/garbage.npy", "wb") as f:
    f.write(b"not a numpy file")
from safetensors.numpy import save_file
save_file({"w": np.array([1, 2, 3, 4], np.float32)}, f"{d}/w.safetensors")
save_file({"v": np.array([1, 2, 3, 4], np.float32)}, f"{d}/other.safetensors")
