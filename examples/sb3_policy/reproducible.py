"""Torch's float results, the same on x86-64 CPUs with and without AVX-512: its math library (MKL) and its own
kernels otherwise pick code paths by the CPU's instruction set, which round differently, so a policy trained on
one machine and re-trained on another would differ. Imported before torch; a value the user set is kept."""
import os
import sys
import warnings

if "torch" in sys.modules:
    warnings.warn("torch was imported before examples.sb3_policy.reproducible: its arithmetic is not pinned",
                  stacklevel=2)
os.environ.setdefault("MKL_CBWR", "COMPATIBLE")  # MKL: one path on every CPU (Conditional Numerical Reproducibility)
os.environ.setdefault("ATEN_CPU_CAPABILITY", "default")  # torch's own kernels: no AVX2/AVX-512 dispatch

import torch  # noqa: E402

torch.set_num_threads(1)  # a sum's order, hence its rounding, would depend on the threads
