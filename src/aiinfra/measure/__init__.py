"""Measure the machine the book is running on, and predict the same numbers with the roofline (chapter 8).

Every other module of :mod:`aiinfra` computes bounds from datasheet numbers. This package times
real work on the reader's own hardware, so that a chapter can predict a measurement first and
then check it. One concern per module:

* :mod:`~aiinfra.measure.backends`: the array library the work runs on (numpy on the CPU, or
  PyTorch on a CUDA GPU when both are present; nothing is ever installed);
* :mod:`~aiinfra.measure.harness`: the timing rules (warm-up, repeats within a budget, the
  median and its spread, interleaved variants) and the :class:`Measurement` record;
* :mod:`~aiinfra.measure.kernels`: the work that is timed (copy, sum, GEMM, the toy decode
  step, tiny calls) and the formulas that count its FLOPs and bytes;
* :mod:`~aiinfra.measure.predictions`: the empirical roofline, the machine's measured
  :class:`Ceilings` in place of datasheet peaks, and the predictions and utilisations made with them;
* :mod:`~aiinfra.measure.record`: the build machine's one record that every page quotes, and the
  stored toy decode sweep a page draws before anything runs.

A CPU's datasheet peak (:func:`aiinfra.roofline.cpu_peak_flops_per_s`) lives with the other peak
formulas. The names below are the public names of the modules, offered here so that a page
writes ``measure.get_backend()``; ``tests/test_measure.py`` holds the two lists equal.
"""

from .backends import DTYPE_BYTES as DTYPE_BYTES
from .backends import Backend as Backend
from .backends import NumpyBackend as NumpyBackend
from .backends import TorchBackend as TorchBackend
from .backends import get_backend as get_backend
from .backends import resolve as resolve
from .harness import SCALE_ENV as SCALE_ENV
from .harness import Measurement as Measurement
from .harness import Timing as Timing
from .harness import time_call as time_call
from .harness import time_interleaved as time_interleaved
from .kernels import MIN_STREAM_BYTES as MIN_STREAM_BYTES
from .kernels import copy_rate_with_write_allocate_bytes_per_s as copy_rate_with_write_allocate_bytes_per_s
from .kernels import default_stream_bytes as default_stream_bytes
from .kernels import matmul_flops as matmul_flops
from .kernels import matmul_min_bytes as matmul_min_bytes
from .kernels import measure_call_overhead as measure_call_overhead
from .kernels import measure_copy_bandwidth as measure_copy_bandwidth
from .kernels import measure_decode_step as measure_decode_step
from .kernels import measure_gemm as measure_gemm
from .kernels import measure_read_bandwidth as measure_read_bandwidth
from .kernels import measure_split_read as measure_split_read
from .kernels import toy_decode_shape as toy_decode_shape
from .predictions import Ceilings as Ceilings
from .predictions import achieved_rate_per_s as achieved_rate_per_s
from .predictions import fit_per_call_s as fit_per_call_s
from .predictions import host_share_of_gap as host_share_of_gap
from .predictions import mbu_against as mbu_against
from .predictions import measured_knee_batch as measured_knee_batch
from .predictions import mfu_against as mfu_against
from .predictions import predict_decode_step_s as predict_decode_step_s
from .predictions import predict_time_s as predict_time_s
from .predictions import predicted_knee_batch as predicted_knee_batch
from .predictions import step_time_with_calls_s as step_time_with_calls_s
from .predictions import throughput_gain as throughput_gain
from .record import RECORD_ENV as RECORD_ENV
from .record import STORED_SWEEP as STORED_SWEEP
from .record import SWEEP_BATCHES as SWEEP_BATCHES
from .record import DecodeSweep as DecodeSweep
from .record import MachineRecord as MachineRecord
from .record import machine_record as machine_record
from .record import measure_ceilings as measure_ceilings
from .record import measure_decode_sweep_record as measure_decode_sweep_record
from .record import stored_decode_sweep as stored_decode_sweep
