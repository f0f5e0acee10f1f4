"""The build machine's record: measured once per build and quoted by every page of chapter 8.

:func:`machine_record` measures copy and read bandwidth, GEMMs at growing sizes and one tiny
call (:class:`MachineRecord`), once per process, or once per book build when
:data:`RECORD_ENV` names a file. :func:`measure_ceilings` takes the three ceiling
measurements afresh in one call.
"""

from __future__ import annotations

import datetime
import json
import os
from dataclasses import asdict, dataclass
from importlib import resources

from aiinfra.formula import check

from .backends import resolve
from .harness import Measurement, Timing
from .kernels import (
    _measure_decode_sweep,
    default_stream_bytes,
    measure_call_overhead,
    measure_copy_bandwidth,
    measure_gemm,
    measure_read_bandwidth,
)
from .predictions import Ceilings


def measure_ceilings(*, dtype="float32", budget_s=1.2, backend=None):
    """Measure copy and read bandwidth and a GEMM, and return ``(Ceilings, [copy, read, gemm])``.

    ``budget_s`` is split 1:1:2 between copy, read and GEMM.
    """
    be = resolve(backend)
    be.check_dtype(dtype)
    total = check("budget_s", budget_s, ">0")
    copy = measure_copy_bandwidth(dtype=dtype, budget_s=total / 4, backend=be)
    read = measure_read_bandwidth(dtype=dtype, budget_s=total / 4, backend=be)
    gemm = measure_gemm(dtype=dtype, budget_s=total / 2, backend=be)
    return Ceilings.from_measurements(gemm, copy, read), [copy, read, gemm]


@dataclass(frozen=True)
class MachineRecord:
    """The build machine's measurements, taken once and quoted by every page of chapter 8.

    Each page used to measure for itself, so the same quantity (one tiny call, the bandwidth,
    the ridge point) came out different from page to page. A page now reads this one record
    (:func:`machine_record`) and computes what it quotes from it.
    """

    backend: str  # the backend's description (library, device, threads)
    device: str  # "cpu" or "cuda"
    copy: Measurement
    read: Measurement
    gemms: tuple  # Measurements of kind "gemm", in growing size
    tiny_call: Measurement

    @property
    def best_gemm(self) -> Measurement:
        return max(self.gemms, key=lambda g: g.flops_per_s)

    @property
    def ceilings(self) -> Ceilings:
        """Best GEMM rate and the better of the copy and read bandwidths."""
        return Ceilings.from_measurements(self.best_gemm, self.copy, self.read)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, indent=1)

    @classmethod
    def from_json(cls, text: str) -> MachineRecord:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data: dict) -> MachineRecord:
        m = _measurement
        return cls(
            data["backend"],
            data["device"],
            m(data["copy"]),
            m(data["read"]),
            tuple(m(g) for g in data["gemms"]),
            m(data["tiny_call"]),
        )


def _measurement(d: dict) -> Measurement:
    t = d["timing"]
    timing = Timing(tuple(t["samples_s"]), t["warmup"], t["first_s"], t["inner"])
    return Measurement(d["kind"], d["backend"], d["flops"], d["bytes_moved"], timing, d["params"])


def _measure_machine(*, backend=None) -> MachineRecord:
    """Measure the record of chapter 8: copy and read bandwidth, GEMMs at growing sizes, one tiny call.

    About 2 s: 0.3 s per bandwidth, 0.25 s per GEMM size (256, 512, 1024 on a CPU; 1024, 4096,
    8192 on a GPU), 0.3 s for the tiny call (a sum of 8 numbers, 2,000 calls per sample).
    """
    be = resolve(backend)
    sizes = (1024, 4096, 8192) if be.device == "cuda" else (256, 512, 1024)
    return MachineRecord(
        be.description,
        be.device,
        measure_copy_bandwidth(budget_s=0.3, backend=be),
        measure_read_bandwidth(budget_s=0.3, backend=be),
        tuple(measure_gemm(n, budget_s=0.25, backend=be) for n in sizes),
        measure_call_overhead(size=8, calls=2000, op="sum", budget_s=0.3, backend=be),
    )


#: Environment variable naming the file that holds the build's :class:`MachineRecord`.
RECORD_ENV = "AIINFRA_MACHINE_RECORD"
_RECORD: dict = {}


def machine_record(backend=None) -> MachineRecord:
    """The build machine's record: measured on the first call, then the same record every time.

    With :data:`RECORD_ENV` set (``make book`` sets it to a file inside the execution cache, so
    the record lives and dies with the cached outputs that quote it), the first page of a build
    to ask measures and writes the file under a lock, and every other page, in any process,
    reads it. Without it (a reader's own kernel), the record is kept for the process.
    """
    path = os.environ.get(RECORD_ENV, "").strip()
    if not path:
        if "record" not in _RECORD:
            _RECORD["record"] = _measure_machine(backend=backend)
        return _RECORD["record"]
    import fcntl  # POSIX only, and needed only by the book build

    file = os.path.abspath(path)
    os.makedirs(os.path.dirname(file), exist_ok=True)
    with open(file + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isfile(file):
            with open(file, encoding="utf-8") as f:
                return MachineRecord.from_json(f.read())
        record = _measure_machine(backend=backend)
        with open(file + ".tmp", "w", encoding="utf-8") as f:
            f.write(record.to_json())
        os.replace(file + ".tmp", file)
        return record


#: The batches of the toy decode sweep, per device: a GPU's knee lies in the hundreds, a CPU's near ten.
SWEEP_BATCHES = {"cpu": (1, 2, 4, 8, 16, 32, 64), "cuda": (1, 4, 16, 64, 256, 1024)}


@dataclass(frozen=True)
class DecodeSweep:
    """A toy decode sweep (float32 weights that overflow the caches, one step per batch) and its machine's record.

    ``sweep`` holds one Measurement of kind ``"decode"`` per batch, in growing batch;
    ``measured_on`` is the date of the run (ISO) and ``source`` says who ran it, how and under
    what conditions (empty for a reader's own run). The stored one (:func:`stored_decode_sweep`)
    draws chapter 8's figure wherever the page is opened without running it.
    """

    machine: MachineRecord
    sweep: tuple
    measured_on: str
    source: str = ""

    @property
    def batches(self) -> tuple:
        return tuple(m.params["batch"] for m in self.sweep)

    @property
    def times_s(self) -> tuple:
        return tuple(m.seconds for m in self.sweep)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> DecodeSweep:
        data = json.loads(text)
        sweep = tuple(_measurement(d) for d in data["sweep"])
        return cls(MachineRecord.from_dict(data["machine"]), sweep, data["measured_on"], data["source"])


def measure_decode_sweep_record(*, budget_s=1.6, source="", backend=None) -> DecodeSweep:
    """This machine's toy decode sweep over :data:`SWEEP_BATCHES`, with :func:`machine_record` beside it.

    The weights are float32 and fill :func:`~aiinfra.measure.kernels.default_stream_bytes`;
    ``budget_s`` is the sweep's total (interleaved rounds).
    """
    be = resolve(backend)
    n_params = default_stream_bytes(be) // 4
    sweep = _measure_decode_sweep(SWEEP_BATCHES[be.device], n_params, budget_s=budget_s, backend=be)
    return DecodeSweep(machine_record(be), tuple(sweep), datetime.date.today().isoformat(), source)


#: The stored sweep, shipped as package data (``aiinfra/catalog/data/NAME``).
STORED_SWEEP = "toy_decode_sweep.json"


def stored_decode_sweep() -> DecodeSweep:
    """The sweep stored with the library: measured once, on the machine and in the conditions its ``source`` names."""
    text = resources.files("aiinfra.catalog").joinpath("data", STORED_SWEEP).read_text(encoding="utf-8")
    return DecodeSweep.from_json(text)
