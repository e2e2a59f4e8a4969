# ruff: noqa: E501 - generated, one kernel a line
"""The kernels most programs compile first: the tutorials' float32 autograd, and float32
training of an MLP and a small CNN.

``pip install`` compiles them for the machine it installs on (``numgrad._prebuild``), and
``numgrad._background`` compiles them in a background process when a program starts on a cold
kernel cache without those. Written by ``python benchmarks/cold_start.py --record`` (the
kernels the demo, ``python -m numgrad``, compiles: its tutorial part, then the digits example,
in the order it first calls them); an entry whose kernel no longer exists is skipped.
"""

KERNELS = (
    ('numgrad.kernels.cpu.random', 'seed', 'uint32[::1], int64'),
    ('numgrad.kernels.cpu.elementwise', 'u_flat__add_s', 'float32[::1], float32[::1], float64, float64'),
    ('numgrad.kernels.cpu.elementwise', 'b_flat__mul', 'float32[::1], float32[::1], float32[::1], float64, float64'),
    ('numgrad.kernels.cpu.elementwise', 'u_flat__mul_s', 'float32[::1], float32[::1], float64, float64'),
    ('numgrad.kernels.cpu.reduction', 'sum_3d', 'float32[:, :, ::1], float32[:, ::1], float64'),
    ('numgrad.kernels.cpu.elementwise', 'fill_scaled', 'float32[::1], float32[::1], float64'),
    ('numgrad.kernels.cpu.elementwise', 'b_flat__add', 'float32[::1], float32[::1], float32[::1], float64, float64'),
    ('numgrad.kernels.cpu.random', 'next_u32', 'uint32[::1], uint32[::1]'),
    ('numgrad.kernels.cpu.random', 'fill_uniform32', 'uint32[::1], float32[::1], float64, float64'),
    ('numgrad.kernels.cpu.random', 'fill_normal32', 'uint32[::1], float32[::1], float64, float64'),
    ('numgrad.kernels.cpu.elementwise', 'u_flat__pow_s', 'float32[::1], float32[::1], float64, float64'),
    ('numgrad.kernels.cpu.elementwise', 'b_flat__pow_s_bwd', 'float32[::1], float32[::1], float32[::1], int64, float64'),
    ('numgrad.kernels.cpu.elementwise', 'u_flat__copy', 'float32[::1], float32[::1], float64, float64'),
    ('numgrad.kernels.cpu.random', 'fill_uniform64', 'uint32[::1], float64[::1], float64, float64'),
    ('numgrad.kernels.cpu.random', 'normal_pairs', 'float64[::1], float64[::1]'),
    ('numgrad.kernels.cpu.random', 'scale_shift', 'float64[::1], float32[::1], float64, float64'),
    ('numgrad.kernels.cpu.elementwise', 'u_flat__exp', 'float32[::1], float32[::1], float64, float64'),
    ('numgrad.kernels.cpu.random', 'randperm', 'uint32[::1], int64[::1]'),
    ('numgrad.kernels.cpu.indexing', 'linearize', 'int64[:, ::1], int64[::1], int64[::1], boolean'),
    ('numgrad.kernels.cpu.indexing', 'gather_axis', 'float32[:, :, ::1], int64[::1], float32[:, :, ::1]'),
    ('numgrad.kernels.cpu.indexing', 'gather_axis', 'int64[:, :, ::1], int64[::1], int64[:, :, ::1]'),
    ('numgrad.kernels.cpu.elementwise', 'b_nd__add', 'float32[:, :, :, ::1], float32[:, :, :, ::1], float32[:, :, :, ::1], float64, float64'),
    ('numgrad.kernels.cpu.elementwise', 'u_flat__relu', 'float32[::1], float32[::1], float64, float64'),
    ('numgrad.kernels.cpu.random', 'bernoulli', 'uint32[::1], float32[::1], float64'),
    ('numgrad.kernels.cpu.reduction', '_softmax_rows', 'float32[:, ::1], float32[:, ::1], boolean'),
    ('numgrad.kernels.cpu.nn', 'nll', 'float32[:, ::1], int64[::1], float32[::1], int64, float32[::1], float32[::1]'),
    ('numgrad.kernels.cpu.nn', 'nll_bwd', 'float32[::1], int64[::1], float32[::1], float64, float32[:, ::1]'),
    ('numgrad.kernels.cpu.reduction', '_log_softmax_bwd_rows', 'float32[:, ::1], float32[:, ::1], float32[:, ::1]'),
    ('numgrad.kernels.cpu.elementwise', 'b_flat__relu_bwd', 'float32[::1], float32[::1], float32[::1], float64, float64'),
    ('numgrad.kernels.cpu.nn', 'adam_step', 'float32[::1], float32[::1], float32[::1], float32[::1], float32[::1], float32[::1], float64, float64, float64, float64, float64, boolean, boolean, boolean'),
    ('numgrad.kernels.cpu.reduction', 'extreme_index_3d', 'float32[:, :, ::1], float32[:, ::1], int64[:, ::1], boolean'),
    ('numgrad.kernels.cpu.elementwise', 'b_flat__eq', 'int64[::1], int64[::1], bool[::1], float64, float64'),
    ('numgrad.kernels.cpu.elementwise', 'u_flat__copy', 'bool[::1], float32[::1], float64, float64'),
    ('numgrad.kernels.cpu.conv', '_forward_split__f32_par', 'float32[:, :, :, ::1], float32[:, ::1], float32[::1], boolean, int64, int64, int64, int64, int64, int64, int64, int64, int64, float32[:, :, ::1], int64[::1]'),
    ('numgrad.kernels.cpu.elementwise', 'u_flat__add_s', 'int64[::1], int64[::1], int64, float64'),
    ('numgrad.kernels.cpu.nn', 'channel_stats', 'float32[:, :, ::1], float64, float64[::1], float64[::1], float64[::1]'),
    ('numgrad.kernels.cpu.nn', 'running_update', 'float32[::1], float64[::1], float64, float64'),
    ('numgrad.kernels.cpu.nn', '_batch_norm_apply__parallel', 'float32[:, :, ::1], float64[::1], float64[::1], float32[::1], float32[::1], float32[:, :, ::1]'),
    ('numgrad.kernels.cpu.nn', '_max_pool2d_2x2__parallel', 'float32[:, :, :, ::1], float32[:, :, :, ::1], int64[:, :, :, ::1]'),
    ('numgrad.kernels.cpu.nn', '_batch_norm_apply', 'float32[:, :, ::1], float64[::1], float64[::1], float32[::1], float32[::1], float32[:, :, ::1]'),
    ('numgrad.kernels.cpu.nn', '_max_pool2d_2x2', 'float32[:, :, :, ::1], float32[:, :, :, ::1], int64[:, :, :, ::1]'),
    ('numgrad.kernels.cpu.nn', '_max_pool2d_bwd', 'float32[:, :, :, ::1], int64[:, :, :, ::1], float32[:, :, :, ::1]'),
    ('numgrad.kernels.cpu.nn', 'batch_norm_bwd_sums', 'float32[:, :, ::1], float32[:, :, ::1], float64[::1], float64[::1], float64[::1], float64[::1]'),
    ('numgrad.kernels.cpu.nn', '_batch_norm_bwd_input', 'float32[:, :, ::1], float32[:, :, ::1], float64[::1], float64[::1], float32[::1], float64[::1], float64[::1], boolean, float32[:, :, ::1]'),
    ('numgrad.kernels.cpu.elementwise', 'u_flat__copy', 'float64[::1], float32[::1], float64, float64'),
    ('numgrad.kernels.cpu.conv', '_backward_split__f32_par', 'float32[:, :, :, ::1], float32[:, ::1], float32[:, :, ::1], int64, int64, int64, int64, int64, int64, int64, int64, int64, boolean, boolean, float32[:, :, :, ::1], float32[:, :, :, ::1], int64[::1]'),
    ('numgrad.kernels.cpu.conv', '_sum_parts__f32', 'float32[:, :, :, ::1], float32[:, ::1]'),
    ('numgrad.kernels.cpu.nn', '_max_pool2d_bwd__parallel', 'float32[:, :, :, ::1], int64[:, :, :, ::1], float32[:, :, :, ::1]'),
    ('numgrad.kernels.cpu.nn', '_batch_norm_bwd_input__parallel', 'float32[:, :, ::1], float32[:, :, ::1], float64[::1], float64[::1], float32[::1], float64[::1], float64[::1], boolean, float32[:, :, ::1]'),
    ('numgrad.kernels.cpu.nn', 'inv_std', 'float32[::1], float64, float64[::1]'),
    ('numgrad.kernels.cpu.elementwise', 'u_flat_par__relu', 'float32[::1], float32[::1], float64, float64'),
)
