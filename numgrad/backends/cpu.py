"""``numgrad.backends.cpu``."""


def get_cpu_capability():
    """The widest vector instructions of this CPU, in PyTorch's words."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            flags = fh.read()
    except OSError:
        return "DEFAULT"
    if " avx512f" in flags:
        return "AVX512"
    if " avx2" in flags:
        return "AVX2"
    return "DEFAULT"
