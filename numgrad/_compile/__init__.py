"""``numgrad.compile``: a traced function replayed as its kernels, without the Python layer
(``api``), recorded by ``tape``, located and replayed by ``plan``, guarded by ``state``."""
