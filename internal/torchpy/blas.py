"""Which BLAS this PyTorch multiplies with, for the scripts that time it.

Debian's python3-torch is built against the generic BLAS interface
(BLAS_INFO=generic) and calls whatever libblas.so.3 the alternatives
system provides: netlib's reference BLAS (libblas3) unless an optimised
one (OpenBLAS, BLIS) is installed. Its matrix products run about 16 times
slower on the reference BLAS, so every figure names the library.
"""
import torch


def blas():
    """The BLAS libraries mapped into this process (after a product has
    loaded them), by file name, or "unknown"."""
    a = torch.ones(2, 2)
    a @ a  # loads the BLAS
    names = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                base = path.rsplit("/", 1)[-1]
                if "blas" in base or "blis" in base or "mkl_core" in base:
                    names.add(path)
    except OSError:
        return "unknown"
    return ", ".join(sorted(names)) or "built in (%s)" % torch.__config__.show().split("BLAS_INFO=")[-1].split(",")[0]
