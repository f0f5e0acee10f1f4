"""Accelerator, link and server specifications, each figure with its source.

Conventions (chapters 1, 2, 4 and 6 rely on them):

* **Dense, not sparse.** Tensor-core peaks are the dense figures. Vendors
  often headline the 2:4-structured-sparsity number, which is twice as large
  (H100 SXM BF16: 1,979 sparse vs 989.4 dense TFLOP/s); that figure appears
  only in ``sources``.
* **Per direction.** Link bandwidths are bytes per second *in one
  direction*. Vendors often add both directions of a full-duplex link
  ("NVLink 4: 900 GB/s" is 450 GB/s each way); :class:`Link.raw_spec`
  keeps the printed figure and :class:`Link.bidirectional_in_spec` says
  whether it summed both directions. Memory buses (HBM, GDDR, DDR) are not
  full duplex: their one figure is shared by reads and writes, and is stored
  as is.
* **Vendor gigabytes.** ``memory_bytes`` is the capacity the vendor prints,
  read as decimal GB (80 GB -> 80e9 B), the convention the book's fit checks
  use. What a driver reports can differ by a few percent.
* GPUs without NVLink use their PCIe link as the scale-up link.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields, replace

from aiinfra.formula import check, choice

# Source strings used more than once.
_H100_WP = "NVIDIA H100 Tensor Core GPU datasheet and Hopper architecture whitepaper (2022)"
_H200_DS = "NVIDIA H200 Tensor Core GPU datasheet (2024)"
_A100_DS = "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM column)"
_V100_DS = "NVIDIA Tesla V100 datasheet (SXM2 32GB) and Volta architecture whitepaper (2017)"
_B200_DS = "NVIDIA HGX B200 / DGX B200 datasheets (per-GPU figures, 1,000 W HGX configuration)"
_GB200_DS = (
    "NVIDIA GB200 NVL72 product page, tech-specs table (2024; figures 'with sparsity', per rack of 72 "
    "GPUs and per GB200 superchip of two GPUs and one Grace CPU)"
)
_ADA_WP = "NVIDIA Ada Lovelace GPU architecture whitepaper (RTX 4090 column, FP32 accumulate)"
_A6000_DS = "NVIDIA RTX A6000 datasheet and Ampere GA102 GPU architecture whitepaper"
_L40S_DS = "NVIDIA L40S datasheet (2023)"
_PRO6000 = "NVIDIA RTX PRO 6000 Blackwell Workstation Edition datasheet (2025)"
_MI300X_DS = "AMD Instinct MI300X data sheet (2023)"
_MI325X_DS = "AMD Instinct MI325X data sheet (2024)"
_MI355X_DS = "AMD Instinct MI355X data sheet and product page (2025)"
_B300_DS = "NVIDIA HGX platform page, HGX B300 column (2025; per 8-GPU baseboard, 'with sparsity' marked)"
_GB300_DS = "NVIDIA GB300 NVL72 product page, tech-specs table (2025; per rack of 72 GPUs)"
_BU_BLOG = "NVIDIA technical blog 'Inside NVIDIA Blackwell Ultra' (2025)"
_TPU_V5E = "Google Cloud TPU documentation, 'TPU v5e' key specifications"
_TPU_V5P = "Google Cloud TPU documentation, 'TPU v5p' key specifications"
_TPU_V6E = "Google Cloud TPU documentation, 'TPU v6e' (Trillium) key specifications"
_TPU_V7 = "Google Cloud TPU documentation, 'TPU7x (Ironwood)' specifications table"
_IRONWOOD = "Google blog 'Ironwood: the first Google TPU for the age of inference' (April 2025)"
_PCIE = "PCI-SIG PCI Express Base Specification (x16 link, 128b/130b encoding from Gen3 on)"
_DGX_H100 = "NVIDIA DGX H100 User Guide, 'Hardware Overview' (2023)"


@dataclass(frozen=True)
class MigProfile:
    """A MIG profile ``<c>g.<m>gb``: ``compute_slices`` of the GPU's 7, ``memory_slices`` of its 8, and how many fit."""

    name: str
    compute_slices: int
    memory_slices: int
    max_instances: int


#: Compute and memory slices an H100 (or A100) is cut into by MIG.
MIG_COMPUTE_SLICES, MIG_MEMORY_SLICES = 7, 8

_MIG_SOURCE = (
    "NVIDIA Multi-Instance GPU User Guide, H100 80GB profile table; H100 whitepaper V1.04, section 4.5 "
    "(up to 7 instances, each with its own L2 banks, memory controllers and DRAM bus)"
)

#: The MIG profiles of an 80 GB H100 (the +me media-extension variant is left out).
_H100_MIG = (
    MigProfile("1g.10gb", 1, 1, 7),
    MigProfile("1g.20gb", 1, 2, 4),
    MigProfile("2g.20gb", 2, 2, 3),
    MigProfile("3g.40gb", 3, 4, 2),
    MigProfile("4g.40gb", 4, 4, 1),
    MigProfile("7g.80gb", 7, 8, 1),
)


def _norm(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


class SourceMap(dict):
    """A read-only dict of field name -> source string (copyable and picklable, unlike a mappingproxy)."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("GPU sources are read-only; build a new GPU with custom_gpu(base=..., sources=...)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse
    __ior__ = _refuse

    def __reduce__(self):
        return (SourceMap, (dict(self),))


@dataclass(frozen=True)
class GPU:
    """One accelerator's headline specifications (SI units, dense peaks, per-direction links).

    ``bf16_dense_flops_per_s`` / ``fp8_dense_flops_per_s`` /
    ``fp16_dense_flops_per_s`` / ``fp4_dense_flops_per_s`` are dense
    tensor-core peaks (None where the format is not supported, e.g. BF16 on
    V100, FP8 before Ada/Hopper, FP4 before Blackwell). The FP4 peak is the
    block-scaled one (NVFP4 and MXFP4 run at the same rate on Blackwell).
    ``scaleup_bytes_per_s_per_direction`` is the GPU's total bandwidth to its
    peers over ``scaleup_link``, one direction. ``sources`` maps each field
    name to where the figure comes from.

    The record also carries what the book looks a GPU up by: ``aliases``
    (short names :func:`gpu` accepts, normalised like names), ``hbm_stacks``
    (active HBM stacks per package, None where not catalogued),
    ``datacenter_flagship`` (a vendor's data-center flagship of its
    generation: the chapter-2 generations table lists these),
    ``scaleup_domain_chips`` (how many chips one scale-up domain joins: an
    HGX board, an NVL72 rack, a TPU pod over ICI; None where not catalogued)
    and ``mig_profiles`` (the Multi-Instance GPU profiles it can be cut into).
    A TPU is a record of the same kind (vendor "Google"), its ICI as the
    scale-up link. ``tdp_watts`` is None where the vendor publishes no power.
    """

    name: str
    vendor: str
    architecture: str
    year: int
    memory_bytes: float
    memory_bandwidth_bytes_per_s: float
    bf16_dense_flops_per_s: float | None
    fp8_dense_flops_per_s: float | None
    scaleup_link: str
    scaleup_bytes_per_s_per_direction: float
    tdp_watts: float | None
    form_factor: str
    memory_type: str = ""
    fp16_dense_flops_per_s: float | None = None
    fp4_dense_flops_per_s: float | None = None
    aliases: tuple[str, ...] = ()
    hbm_stacks: int | None = None
    datacenter_flagship: bool = False
    scaleup_domain_chips: int | None = None
    mig_profiles: tuple[MigProfile, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self):
        for f in ("name", "vendor", "architecture", "scaleup_link", "form_factor"):
            value = getattr(self, f)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{f} must be a non-empty string, got {value!r}")
        if not isinstance(self.memory_type, str):
            raise ValueError(f"memory_type must be a string, got {self.memory_type!r}")
        if not isinstance(self.aliases, tuple) or not all(
            isinstance(a, str) and _norm(a) for a in self.aliases
        ):
            raise ValueError(f"aliases must be a tuple of non-empty strings, got {self.aliases!r}")
        if self.hbm_stacks is not None:
            object.__setattr__(
                self, "hbm_stacks", check("hbm_stacks", self.hbm_stacks, "int>=1", scalar=True)
            )
        if not isinstance(self.datacenter_flagship, bool):
            raise ValueError(f"datacenter_flagship must be True or False, got {self.datacenter_flagship!r}")
        if not isinstance(self.mig_profiles, tuple) or not all(
            isinstance(m, MigProfile) for m in self.mig_profiles
        ):
            raise ValueError(f"mig_profiles must be a tuple of MigProfile, got {self.mig_profiles!r}")
        year = check("year", self.year, "int>=1990", scalar=True)
        if year > 2100:
            raise ValueError(f"year must be a whole number in [1990, 2100], got {self.year!r}")
        object.__setattr__(self, "year", year)
        for f in ("memory_bytes", "memory_bandwidth_bytes_per_s", "scaleup_bytes_per_s_per_direction"):
            object.__setattr__(self, f, _scalar_positive(f, getattr(self, f)))
        if self.tdp_watts is not None:
            object.__setattr__(self, "tdp_watts", _scalar_positive("tdp_watts", self.tdp_watts))
        if self.scaleup_domain_chips is not None:
            object.__setattr__(
                self,
                "scaleup_domain_chips",
                check("scaleup_domain_chips", self.scaleup_domain_chips, "int>=1", scalar=True),
            )
        for f in _PEAK_FIELDS:
            value = getattr(self, f)
            if value is not None:
                object.__setattr__(self, f, _scalar_positive(f, value))
        if self.bf16_dense_flops_per_s is None and self.fp16_dense_flops_per_s is None:
            raise ValueError("bf16_dense_flops_per_s and fp16_dense_flops_per_s cannot both be None")
        if not isinstance(self.sources, Mapping):
            raise ValueError(f"sources must be a dict of field name -> source string, got {self.sources!r}")
        names = {f.name for f in fields(self)} - {"sources"}
        unknown = set(self.sources) - names
        if unknown:
            raise ValueError(f"sources keys must be GPU field names, got unknown {sorted(unknown)}")
        object.__setattr__(self, "sources", SourceMap(self.sources))

    def has_peak(self, precision: str = "bf16") -> bool:
        """True when the catalog gives a dense tensor-core peak for ``precision`` (FP16 falls back to BF16)."""
        choice("precision", precision, {"bf16", "fp16", "fp8", "fp4"})
        if precision == "fp16":
            return self.fp16_dense_flops_per_s is not None or self.bf16_dense_flops_per_s is not None
        return getattr(self, f"{precision}_dense_flops_per_s") is not None

    def mig_profile(self, profile: str) -> MigProfile:
        """The MIG profile named ``profile`` ("1g.10gb"); ValueError if this GPU has no such profile."""
        by_name = {p.name: p for p in self.mig_profiles}
        return by_name[choice("profile", profile, set(by_name))]

    def dense_flops_per_s(self, precision: str = "bf16") -> float:
        """Dense tensor-core peak for ``precision`` ("bf16", "fp16", "fp8" or "fp4").

        FP16 falls back to the BF16 figure where the vendor gives one number
        for both; "fp4" is the block-scaled NVFP4/MXFP4 rate. Raises
        ``ValueError`` when the GPU has no such peak.
        """
        choice("precision", precision, {"bf16", "fp16", "fp8", "fp4"})
        if precision == "fp16":
            value = self.fp16_dense_flops_per_s or self.bf16_dense_flops_per_s
        else:
            value = getattr(self, f"{precision}_dense_flops_per_s")
        if value is None:
            raise ValueError(f"precision {precision!r} has no tensor-core peak on {self.name}")
        return value

    @property
    def ridge_flops_per_byte(self) -> float:
        """Dense BF16 (or FP16) peak over memory bandwidth: the roofline ridge point, FLOP/B."""
        return self.dense_flops_per_s("fp16") / self.memory_bandwidth_bytes_per_s


#: The tensor-core peak fields of a GPU record, one per matrix-input precision.
_PEAK_FIELDS = (
    "bf16_dense_flops_per_s",
    "fp8_dense_flops_per_s",
    "fp16_dense_flops_per_s",
    "fp4_dense_flops_per_s",
)


def _scalar_positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number > 0, got {value!r}")
    return check(name, float(value), ">0")


def _gpu(**kw) -> GPU:
    return GPU(**kw)


_CATALOG: tuple[GPU, ...] = (
    _gpu(
        name="V100 SXM2 32GB",
        vendor="NVIDIA",
        architecture="Volta",
        year=2018,
        memory_bytes=32e9,
        memory_type="HBM2",
        memory_bandwidth_bytes_per_s=900e9,
        bf16_dense_flops_per_s=None,
        fp16_dense_flops_per_s=125e12,
        fp8_dense_flops_per_s=None,
        scaleup_link="NVLink 2",
        scaleup_bytes_per_s_per_direction=150e9,
        tdp_watts=300,
        form_factor="SXM2",
        fp4_dense_flops_per_s=None,
        aliases=("V100", "V100 SXM2", "V100 32GB"),
        hbm_stacks=4,
        datacenter_flagship=True,
        sources={
            "scaleup_domain_chips": "not one switched domain: a DGX-1 joins its 8 V100s in an NVLink hybrid cube-mesh",
            "hbm_stacks": "Volta architecture whitepaper (2017): four HBM2 stacks (4,096-bit bus)",
            "fp4_dense_flops_per_s": "no FP4 tensor cores before Blackwell",
            "year": _V100_DS + "; the 32GB version shipped in 2018 (the 16GB V100 in 2017)",
            "memory_bytes": _V100_DS,
            "memory_bandwidth_bytes_per_s": _V100_DS + ": 900 GB/s",
            "fp16_dense_flops_per_s": _V100_DS
            + ": 125 TFLOP/s mixed-precision tensor (dense; Volta has no sparsity)",
            "bf16_dense_flops_per_s": "Volta tensor cores support FP16 only, no BF16",
            "fp8_dense_flops_per_s": "no FP8 before Ada/Hopper",
            "scaleup_bytes_per_s_per_direction": _V100_DS
            + ": NVLink 300 GB/s total (6 links x 50 GB/s both ways)"
            " -> 150 GB/s per direction",
            "tdp_watts": _V100_DS,
        },
    ),
    _gpu(
        name="A100 80GB SXM",
        vendor="NVIDIA",
        architecture="Ampere",
        year=2020,
        memory_bytes=80e9,
        memory_type="HBM2e",
        memory_bandwidth_bytes_per_s=2.039e12,
        bf16_dense_flops_per_s=312e12,
        fp8_dense_flops_per_s=None,
        scaleup_link="NVLink 3",
        scaleup_bytes_per_s_per_direction=300e9,
        tdp_watts=400,
        form_factor="SXM4",
        fp4_dense_flops_per_s=None,
        aliases=("A100", "A100 80GB", "A100 SXM", "A100 SXM4 80GB"),
        hbm_stacks=5,
        datacenter_flagship=True,
        scaleup_domain_chips=8,
        sources={
            "scaleup_domain_chips": "NVIDIA DGX A100 / HGX A100: 8 GPUs through 6 NVSwitch chips",
            "hbm_stacks": "NVIDIA A100 Tensor Core GPU architecture whitepaper (2020): 5 of the 6 HBM2e sites active (5,120 bits)",
            "fp4_dense_flops_per_s": "no FP4 tensor cores before Blackwell",
            "memory_bytes": _A100_DS,
            "memory_bandwidth_bytes_per_s": _A100_DS + ": 2,039 GB/s",
            "bf16_dense_flops_per_s": _A100_DS + ": BF16 tensor 312 TFLOP/s dense (624 with sparsity)",
            "fp8_dense_flops_per_s": "no FP8 on Ampere",
            "scaleup_bytes_per_s_per_direction": _A100_DS
            + ": NVLink 600 GB/s total (12 links) -> 300 per direction",
            "tdp_watts": _A100_DS,
            "year": "A100 80GB announced November 2020",
        },
    ),
    _gpu(
        name="RTX A6000",
        vendor="NVIDIA",
        architecture="Ampere",
        year=2020,
        memory_bytes=48e9,
        memory_type="GDDR6",
        memory_bandwidth_bytes_per_s=768e9,
        bf16_dense_flops_per_s=154.8e12,
        fp8_dense_flops_per_s=None,
        scaleup_link="NVLink bridge (2 GPUs)",
        scaleup_bytes_per_s_per_direction=56.25e9,
        tdp_watts=300,
        form_factor="PCIe dual-slot",
        fp4_dense_flops_per_s=None,
        aliases=("A6000",),
        sources={
            "fp4_dense_flops_per_s": "no FP4 tensor cores before Blackwell",
            "memory_bytes": _A6000_DS,
            "memory_bandwidth_bytes_per_s": _A6000_DS + ": 768 GB/s",
            "bf16_dense_flops_per_s": _A6000_DS + ": 309.7 TFLOP/s tensor with sparsity -> 154.8 dense",
            "fp8_dense_flops_per_s": "no FP8 on Ampere",
            "scaleup_bytes_per_s_per_direction": _A6000_DS
            + ": NVLink bridge 112.5 GB/s bidirectional -> 56.25 per direction",
            "tdp_watts": _A6000_DS,
        },
    ),
    _gpu(
        name="H100 SXM",
        vendor="NVIDIA",
        architecture="Hopper",
        year=2022,
        memory_bytes=80e9,
        memory_type="HBM3",
        memory_bandwidth_bytes_per_s=3.35e12,
        bf16_dense_flops_per_s=989.4e12,
        fp8_dense_flops_per_s=1978.9e12,
        scaleup_link="NVLink 4",
        scaleup_bytes_per_s_per_direction=450e9,
        tdp_watts=700,
        form_factor="SXM5",
        fp4_dense_flops_per_s=None,
        aliases=("H100", "H100 SXM5", "H100 SXM 80GB"),
        hbm_stacks=5,
        datacenter_flagship=True,
        mig_profiles=_H100_MIG,
        scaleup_domain_chips=8,
        sources={
            "scaleup_domain_chips": _DGX_H100 + ": 8 GPUs through 4 NVSwitch chips",
            "hbm_stacks": _H100_WP + ": the H100 SXM enables 5 of its 6 HBM3 sites (5,120 bits)",
            "fp4_dense_flops_per_s": "Hopper has no FP4 tensor cores (FP4 weights are upcast to FP8 or BF16)",
            "memory_bytes": _H100_WP + ": 80 GB",
            "memory_bandwidth_bytes_per_s": _H100_WP + ": 3.35 TB/s",
            "bf16_dense_flops_per_s": _H100_WP + ": BF16 tensor 1,979 TFLOP/s with sparsity -> 989.4 dense",
            "fp8_dense_flops_per_s": _H100_WP + ": FP8 tensor 3,958 TFLOP/s with sparsity -> 1,978.9 dense",
            "scaleup_bytes_per_s_per_direction": _H100_WP
            + ": NVLink 900 GB/s total (18 links) -> 450 per direction",
            "tdp_watts": _H100_WP + ": up to 700 W (configurable)",
        },
    ),
    _gpu(
        name="RTX 4090",
        vendor="NVIDIA",
        architecture="Ada Lovelace",
        year=2022,
        memory_bytes=24e9,
        memory_type="GDDR6X",
        memory_bandwidth_bytes_per_s=1.008e12,
        bf16_dense_flops_per_s=165.2e12,
        fp8_dense_flops_per_s=330.3e12,
        scaleup_link="PCIe Gen4 x16",
        scaleup_bytes_per_s_per_direction=32e9,
        tdp_watts=450,
        form_factor="PCIe triple-slot (consumer)",
        fp4_dense_flops_per_s=None,
        aliases=("4090", "GeForce RTX 4090"),
        sources={
            "fp4_dense_flops_per_s": "Ada has no FP4 tensor cores",
            "memory_bytes": _ADA_WP,
            "memory_bandwidth_bytes_per_s": _ADA_WP + ": 1,008 GB/s",
            "bf16_dense_flops_per_s": _ADA_WP + ": BF16 165.2 dense / 330.4 sparse TFLOP/s",
            "fp8_dense_flops_per_s": _ADA_WP + ": FP8 330.3 dense / 660.6 sparse TFLOP/s",
            "scaleup_bytes_per_s_per_direction": "no NVLink on the RTX 4090; "
            + _PCIE
            + ": Gen4 x16 = 32 GB/s per direction",
            "tdp_watts": _ADA_WP + ": 450 W total graphics power",
        },
    ),
    _gpu(
        name="L40S",
        vendor="NVIDIA",
        architecture="Ada Lovelace",
        year=2023,
        memory_bytes=48e9,
        memory_type="GDDR6",
        memory_bandwidth_bytes_per_s=864e9,
        bf16_dense_flops_per_s=362.05e12,
        fp8_dense_flops_per_s=733e12,
        scaleup_link="PCIe Gen4 x16",
        scaleup_bytes_per_s_per_direction=32e9,
        tdp_watts=350,
        form_factor="PCIe dual-slot (passive)",
        fp4_dense_flops_per_s=None,
        sources={
            "fp4_dense_flops_per_s": "Ada has no FP4 tensor cores",
            "memory_bytes": _L40S_DS,
            "memory_bandwidth_bytes_per_s": _L40S_DS + ": 864 GB/s",
            "bf16_dense_flops_per_s": _L40S_DS + ": BF16 362.05 dense / 733 sparse TFLOP/s",
            "fp8_dense_flops_per_s": _L40S_DS + ": FP8 733 dense / 1,466 sparse TFLOP/s",
            "scaleup_bytes_per_s_per_direction": _L40S_DS
            + ": PCIe Gen4 x16, 64 GB/s bidirectional -> 32 per direction; no NVLink",
            "tdp_watts": _L40S_DS + ": 350 W max power",
        },
    ),
    _gpu(
        name="MI300X",
        vendor="AMD",
        architecture="CDNA 3",
        year=2023,
        memory_bytes=192e9,
        memory_type="HBM3",
        memory_bandwidth_bytes_per_s=5.3e12,
        bf16_dense_flops_per_s=1307.4e12,
        fp8_dense_flops_per_s=2614.9e12,
        scaleup_link="Infinity Fabric (7 links)",
        scaleup_bytes_per_s_per_direction=448e9,
        tdp_watts=750,
        form_factor="OAM",
        fp4_dense_flops_per_s=None,
        aliases=("Instinct MI300X", "AMD MI300X"),
        datacenter_flagship=True,
        scaleup_domain_chips=8,
        sources={
            "scaleup_domain_chips": _MI300X_DS
            + ": 8 GPUs per platform, each joined to the other 7 by one link",
            "fp4_dense_flops_per_s": "CDNA 3 has no FP4 matrix cores (CDNA 4, MI355X, adds them)",
            "memory_bytes": _MI300X_DS,
            "memory_bandwidth_bytes_per_s": _MI300X_DS + ": 5.3 TB/s peak",
            "bf16_dense_flops_per_s": _MI300X_DS + ": BF16 1,307.4 dense / 2,614.9 sparse TFLOP/s",
            "fp8_dense_flops_per_s": _MI300X_DS + ": FP8 2,614.9 dense / 5,229.8 sparse TFLOP/s",
            "scaleup_bytes_per_s_per_direction": _MI300X_DS + ": 7 Infinity Fabric links, 128 GB/s each "
            "bidirectional (896 GB/s aggregate) -> 448 GB/s per direction",
            "tdp_watts": _MI300X_DS + ": 750 W",
        },
    ),
    _gpu(
        name="H200 SXM",
        vendor="NVIDIA",
        architecture="Hopper",
        year=2024,
        memory_bytes=141e9,
        memory_type="HBM3e",
        memory_bandwidth_bytes_per_s=4.8e12,
        bf16_dense_flops_per_s=989.4e12,
        fp8_dense_flops_per_s=1978.9e12,
        scaleup_link="NVLink 4",
        scaleup_bytes_per_s_per_direction=450e9,
        tdp_watts=700,
        form_factor="SXM5",
        fp4_dense_flops_per_s=None,
        aliases=("H200",),
        hbm_stacks=6,
        datacenter_flagship=True,
        scaleup_domain_chips=8,
        sources={
            "scaleup_domain_chips": _H200_DS + ": HGX H200, 8 GPUs through NVSwitch",
            "hbm_stacks": _H200_DS + ": all 6 HBM3e sites of the Hopper package (6,144 bits)",
            "fp4_dense_flops_per_s": "Hopper has no FP4 tensor cores (FP4 weights are upcast to FP8 or BF16)",
            "memory_bytes": _H200_DS + ": 141 GB",
            "memory_bandwidth_bytes_per_s": _H200_DS + ": 4.8 TB/s",
            "bf16_dense_flops_per_s": _H200_DS
            + ": BF16 1,979 TFLOP/s with sparsity -> 989.4 dense (same die as H100)",
            "fp8_dense_flops_per_s": _H200_DS + ": FP8 3,958 TFLOP/s with sparsity -> 1,978.9 dense",
            "scaleup_bytes_per_s_per_direction": _H200_DS + ": NVLink 900 GB/s total -> 450 per direction",
            "tdp_watts": _H200_DS + ": up to 700 W",
        },
    ),
    _gpu(
        name="B200",
        vendor="NVIDIA",
        architecture="Blackwell",
        year=2024,
        memory_bytes=180e9,
        memory_type="HBM3e",
        memory_bandwidth_bytes_per_s=8e12,
        bf16_dense_flops_per_s=2250e12,
        fp8_dense_flops_per_s=4500e12,
        scaleup_link="NVLink 5",
        scaleup_bytes_per_s_per_direction=900e9,
        tdp_watts=1000,
        form_factor="SXM6 (HGX baseboard)",
        fp4_dense_flops_per_s=9000e12,
        aliases=("HGX B200",),
        hbm_stacks=8,
        datacenter_flagship=True,
        scaleup_domain_chips=8,
        sources={
            "scaleup_domain_chips": _B200_DS + ": 8 GPUs on one NVLink switch baseboard",
            "hbm_stacks": "NVIDIA Blackwell architecture technical brief: two dies, four HBM3e stacks each",
            "fp4_dense_flops_per_s": _B200_DS
            + ": FP4 tensor 144 PFLOP/s with sparsity per 8 GPUs -> 9 dense per GPU "
            "(NVIDIA Blackwell architecture technical brief: NVFP4 and MXFP4 at the same rate)",
            "memory_bytes": _B200_DS + ": 1,440 GB per 8-GPU system -> 180 GB per GPU",
            "memory_bandwidth_bytes_per_s": _B200_DS + ": 64 TB/s per DGX B200 -> 8 TB/s per GPU "
            "(the HGX page prints 7.7 TB/s)",
            "bf16_dense_flops_per_s": _B200_DS + ": BF16 4.5 PFLOP/s with sparsity -> 2.25 dense",
            "fp8_dense_flops_per_s": _B200_DS + ": FP8 9 PFLOP/s with sparsity -> 4.5 dense",
            "scaleup_bytes_per_s_per_direction": _B200_DS
            + ": NVLink 5 1.8 TB/s total per GPU -> 900 per direction",
            "tdp_watts": _B200_DS + ": 1,000 W",
        },
    ),
    _gpu(
        name="GB200",
        vendor="NVIDIA",
        architecture="Blackwell",
        year=2024,
        memory_bytes=186e9,
        memory_type="HBM3e",
        memory_bandwidth_bytes_per_s=8e12,
        bf16_dense_flops_per_s=2500e12,
        fp8_dense_flops_per_s=5000e12,
        scaleup_link="NVLink 5",
        scaleup_bytes_per_s_per_direction=900e9,
        tdp_watts=1200,
        form_factor="GB200 superchip (two GPUs and one Grace CPU per board)",
        fp4_dense_flops_per_s=10e15,
        aliases=("GB200 GPU",),
        scaleup_domain_chips=72,
        sources={
            "scaleup_domain_chips": _GB200_DS + ": 72 GPUs in one NVLink domain",
            "memory_bytes": _GB200_DS + ": up to 13.4 TB HBM3e per rack (372 GB per superchip) "
            "-> 186 GB per GPU, as MLPerf Inference system descriptions list it ('NVIDIA GB200 186GB')",
            "memory_bandwidth_bytes_per_s": _GB200_DS + ": 576 TB/s per rack (16 TB/s per superchip) "
            "-> 8 TB/s per GPU",
            "bf16_dense_flops_per_s": _GB200_DS + ": FP16/BF16 360 PFLOP/s per rack with sparsity "
            "(10 per superchip) -> 5 per GPU sparse, 2.5 dense",
            "fp8_dense_flops_per_s": _GB200_DS + ": FP8/FP6 720 PFLOP/s per rack with sparsity "
            "-> 10 per GPU sparse, 5 dense",
            "fp4_dense_flops_per_s": _GB200_DS + ": FP4 1,440 PFLOP/s per rack with sparsity "
            "-> 20 per GPU sparse, 10 dense (NVFP4 and MXFP4 at the same rate)",
            "scaleup_bytes_per_s_per_direction": _GB200_DS
            + ": NVLink 5 1.8 TB/s total per GPU (130 TB/s per rack) -> 900 per direction",
            "tdp_watts": "SemiAnalysis, 'GB300 & B300' (December 2024): about 1,200 W per GPU in a GB200 "
            "NVL72, an analyst's figure; NVIDIA's spec table gives no per-GPU power for the GB200",
        },
    ),
    _gpu(
        name="RTX PRO 6000 Blackwell Workstation",
        vendor="NVIDIA",
        architecture="Blackwell",
        year=2025,
        memory_bytes=96e9,
        memory_type="GDDR7",
        memory_bandwidth_bytes_per_s=1.792e12,
        bf16_dense_flops_per_s=503.8e12,
        fp8_dense_flops_per_s=1007.6e12,
        scaleup_link="PCIe Gen5 x16",
        scaleup_bytes_per_s_per_direction=64e9,
        tdp_watts=600,
        form_factor="PCIe dual-slot (workstation)",
        fp4_dense_flops_per_s=2015.2e12,
        aliases=(
            "RTX PRO 6000",
            "PRO 6000",
            "RTX PRO 6000 Blackwell",
            "RTX PRO 6000 Blackwell Workstation Edition",
        ),
        sources={
            "fp4_dense_flops_per_s": _PRO6000 + ": 4,000 AI TOPS is FP4 with sparsity -> about 2,000 dense; "
            "twice the dense FP8 rate, 2,015.2 TFLOP/s",
            "memory_bytes": _PRO6000 + ": 96 GB GDDR7 with ECC",
            "memory_bandwidth_bytes_per_s": _PRO6000 + ": 1,792 GB/s (512-bit, 28 Gbps)",
            "bf16_dense_flops_per_s": "NVIDIA RTX Blackwell GPU architecture whitepaper: 503.8 dense BF16 TFLOP/s "
            "(FP32 accumulate); the figure the source texts use",
            "fp8_dense_flops_per_s": "twice the dense BF16 rate, consistent with the datasheet's 4,000 AI TOPS "
            "(FP4 with sparsity = 4x the dense FP8 rate)",
            "scaleup_bytes_per_s_per_direction": "no NVLink; " + _PCIE + ": Gen5 x16 = 64 GB/s per direction",
            "tdp_watts": _PRO6000 + ": 600 W max power",
        },
    ),
    _gpu(
        name="MI325X",
        vendor="AMD",
        architecture="CDNA 3",
        year=2024,
        memory_bytes=256e9,
        memory_type="HBM3e",
        memory_bandwidth_bytes_per_s=6e12,
        bf16_dense_flops_per_s=1307.4e12,
        fp8_dense_flops_per_s=2614.9e12,
        scaleup_link="Infinity Fabric (7 links)",
        scaleup_bytes_per_s_per_direction=448e9,
        tdp_watts=1000,
        form_factor="OAM",
        fp4_dense_flops_per_s=None,
        aliases=("Instinct MI325X", "AMD MI325X"),
        datacenter_flagship=True,
        scaleup_domain_chips=8,
        sources={
            "memory_bytes": _MI325X_DS + ": 256 GB HBM3E",
            "memory_bandwidth_bytes_per_s": _MI325X_DS + ": 6 TB/s peak",
            "bf16_dense_flops_per_s": _MI325X_DS
            + ": BF16 1,307.4 dense / 2,614.9 sparse TFLOP/s (the MI300X's "
            "compute die)",
            "fp8_dense_flops_per_s": _MI325X_DS + ": FP8 2,614.9 dense / 5,229.8 sparse TFLOP/s",
            "fp4_dense_flops_per_s": "CDNA 3 has no FP4 matrix cores",
            "scaleup_bytes_per_s_per_direction": _MI325X_DS + ": 7 Infinity Fabric links, 128 GB/s each "
            "bidirectional (896 GB/s aggregate) -> 448 GB/s per direction",
            "scaleup_domain_chips": _MI325X_DS
            + ": 8 GPUs per platform, each joined to the other 7 by one link",
            "tdp_watts": _MI325X_DS + ": 1,000 W total board power",
        },
    ),
    _gpu(
        name="B300",
        vendor="NVIDIA",
        architecture="Blackwell Ultra",
        year=2025,
        memory_bytes=288e9,
        memory_type="HBM3e",
        memory_bandwidth_bytes_per_s=8e12,
        bf16_dense_flops_per_s=2250e12,
        fp8_dense_flops_per_s=4500e12,
        scaleup_link="NVLink 5",
        scaleup_bytes_per_s_per_direction=900e9,
        tdp_watts=None,
        form_factor="SXM (HGX B300 baseboard)",
        fp4_dense_flops_per_s=13125e12,
        aliases=("HGX B300", "Blackwell Ultra"),
        hbm_stacks=8,
        datacenter_flagship=True,
        scaleup_domain_chips=8,
        sources={
            "memory_bytes": _B300_DS + ": 2.3 TB per 8 GPUs; " + _BU_BLOG + ": 288 GB HBM3E per GPU",
            "hbm_stacks": _BU_BLOG
            + ": 288 GB in 12-high HBM3E stacks of 36 GB, eight of them (four per die, the B200 layout)",
            "memory_bandwidth_bytes_per_s": _BU_BLOG + ": 8 TB/s per GPU",
            "bf16_dense_flops_per_s": _B300_DS + ": FP16/BF16 36 PFLOP/s with sparsity per 8 GPUs "
            "-> 4.5 sparse, 2.25 dense per GPU (the B200's rate)",
            "fp8_dense_flops_per_s": _B300_DS
            + ": FP8/FP6 72 PFLOP/s with sparsity per 8 GPUs -> 4.5 dense per GPU",
            "fp4_dense_flops_per_s": _B300_DS + ": FP4 144 PFLOP/s with sparsity, 105 dense, per 8 GPUs "
            "-> 13.125 dense per GPU (NVFP4; HGX clocks, below the GB300's 15)",
            "scaleup_bytes_per_s_per_direction": _B300_DS + ": NVLink 5 1.8 TB/s per GPU (14.4 TB/s per 8) "
            "-> 900 GB/s per direction",
            "scaleup_domain_chips": _B300_DS + ": 8 GPUs on one NVLink switch baseboard",
            "tdp_watts": "not published: NVIDIA's HGX B300 specifications give no per-GPU power",
        },
    ),
    _gpu(
        name="GB300",
        vendor="NVIDIA",
        architecture="Blackwell Ultra",
        year=2025,
        memory_bytes=288e9,
        memory_type="HBM3e",
        memory_bandwidth_bytes_per_s=8e12,
        bf16_dense_flops_per_s=2500e12,
        fp8_dense_flops_per_s=5000e12,
        scaleup_link="NVLink 5",
        scaleup_bytes_per_s_per_direction=900e9,
        tdp_watts=1400,
        form_factor="GB300 superchip board (four GPUs and two Grace CPUs) in an NVL72 rack",
        fp4_dense_flops_per_s=15e15,
        aliases=("GB300 GPU", "GB300 NVL72"),
        hbm_stacks=8,
        scaleup_domain_chips=72,
        sources={
            "memory_bytes": _BU_BLOG
            + ": 288 GB HBM3E per GPU; "
            + _GB300_DS
            + ": up to 20 TB per rack of 72",
            "hbm_stacks": _BU_BLOG
            + ": 288 GB in 12-high HBM3E stacks of 36 GB, eight of them (four per die, the B200 layout)",
            "memory_bandwidth_bytes_per_s": _GB300_DS + ": up to 576 TB/s per rack -> 8 TB/s per GPU",
            "bf16_dense_flops_per_s": _GB300_DS + ": FP16/BF16 360 PFLOP/s per rack with sparsity "
            "-> 5 sparse, 2.5 dense per GPU",
            "fp8_dense_flops_per_s": _GB300_DS + ": FP8/FP6 720 PFLOP/s per rack with sparsity "
            "-> 10 sparse, 5 dense per GPU",
            "fp4_dense_flops_per_s": _GB300_DS + ": FP4 1,440 PFLOP/s sparse, 1,080 dense per rack "
            "-> 15 dense per GPU; " + _BU_BLOG + ": 15 PFLOP/s dense NVFP4",
            "scaleup_bytes_per_s_per_direction": _GB300_DS + ": NVLink 130 TB/s per rack, 1.8 TB/s per GPU "
            "-> 900 GB/s per direction",
            "scaleup_domain_chips": _GB300_DS + ": 72 GPUs in one NVLink domain",
            "tdp_watts": _BU_BLOG + ": up to 1,400 W per GPU (the GB300 configuration)",
        },
    ),
    _gpu(
        name="MI355X",
        vendor="AMD",
        architecture="CDNA 4",
        year=2025,
        memory_bytes=288e9,
        memory_type="HBM3e",
        memory_bandwidth_bytes_per_s=8e12,
        bf16_dense_flops_per_s=2516.6e12,
        fp8_dense_flops_per_s=5033.2e12,
        scaleup_link="Infinity Fabric 4 (7 links)",
        scaleup_bytes_per_s_per_direction=537.6e9,
        tdp_watts=1400,
        form_factor="OAM (liquid-cooled)",
        fp4_dense_flops_per_s=10066.3e12,
        aliases=("Instinct MI355X", "AMD MI355X"),
        datacenter_flagship=True,
        scaleup_domain_chips=8,
        sources={
            "memory_bytes": _MI355X_DS + ": 288 GB HBM3E",
            "memory_bandwidth_bytes_per_s": _MI355X_DS + ": 8 TB/s peak",
            "bf16_dense_flops_per_s": _MI355X_DS + ": BF16 2.5 PFLOP/s dense, 5.0 with sparsity "
            "(256 CUs x 2.4 GHz x 4,096 FLOPs per CU per clock = 2,516.6 TFLOP/s)",
            "fp8_dense_flops_per_s": _MI355X_DS + ": FP8 5.0 PFLOP/s dense, 10.1 with sparsity "
            "(8,192 FLOPs per CU per clock, AMD's ISSCC paper on the MI355X)",
            "fp4_dense_flops_per_s": _MI355X_DS
            + ": MXFP4 (and MXFP6) 10.1 PFLOP/s dense, 20.1 with sparsity; "
            "CDNA 4 runs OCP MXFP4, not NVFP4",
            "scaleup_bytes_per_s_per_direction": _MI355X_DS + ": 7 Infinity Fabric links, 153.6 GB/s each "
            "bidirectional (1,075.2 GB/s aggregate) -> 537.6 GB/s per direction",
            "scaleup_domain_chips": _MI355X_DS + ": 8 GPUs per platform, fully connected",
            "tdp_watts": _MI355X_DS + ": 1,400 W total board power (the air-cooled MI350X: 1,000 W)",
        },
    ),
    _gpu(
        name="TPU v5e",
        vendor="Google",
        architecture="TPU v5e",
        year=2023,
        memory_bytes=16e9,
        memory_type="HBM2",
        memory_bandwidth_bytes_per_s=819e9,
        bf16_dense_flops_per_s=197e12,
        fp8_dense_flops_per_s=None,
        scaleup_link="ICI (2D torus, 4 ports)",
        scaleup_bytes_per_s_per_direction=200e9,
        tdp_watts=None,
        form_factor="TPU chip (8 per host)",
        fp4_dense_flops_per_s=None,
        aliases=("v5e", "TPUv5e"),
        scaleup_domain_chips=256,
        sources={
            "memory_bytes": _TPU_V5E + ": 16 GB HBM2",
            "memory_bandwidth_bytes_per_s": _TPU_V5E + ": 819 GBps (a later revision of the page prints "
            "800 GiBps, 859 GB/s)",
            "bf16_dense_flops_per_s": _TPU_V5E
            + ": 197 TFLOP/s peak BF16 per chip (TPUs have no 2:4 sparsity "
            "mode: the figure is dense)",
            "fp8_dense_flops_per_s": _TPU_V5E + ": no FP8 peak published (INT8 393 TOP/s)",
            "fp4_dense_flops_per_s": "no FP4 peak published for any TPU",
            "scaleup_bytes_per_s_per_direction": _TPU_V5E + ": bidirectional ICI bandwidth 400 GBps per chip "
            "(4 ports; the older page's 1,600 Gbps is the same sum) -> 200 GB/s per direction",
            "scaleup_domain_chips": _TPU_V5E + ": 256 chips per pod (16 x 16 2D torus)",
            "tdp_watts": "not published: Google gives no per-chip power for TPU v5e",
        },
    ),
    _gpu(
        name="TPU v5p",
        vendor="Google",
        architecture="TPU v5p",
        year=2023,
        memory_bytes=95e9,
        memory_type="HBM2e",
        memory_bandwidth_bytes_per_s=2.765e12,
        bf16_dense_flops_per_s=459e12,
        fp8_dense_flops_per_s=459e12,
        scaleup_link="ICI (3D torus, 6 ports)",
        scaleup_bytes_per_s_per_direction=600e9,
        tdp_watts=None,
        form_factor="TPU chip (4 per host)",
        fp4_dense_flops_per_s=None,
        aliases=("v5p", "TPUv5p"),
        datacenter_flagship=True,
        scaleup_domain_chips=8960,
        sources={
            "memory_bytes": _TPU_V5P + ": 95 GB HBM2e (a later revision prints 95 GiB)",
            "memory_bandwidth_bytes_per_s": _TPU_V5P + ": 2,765 GBps (2,575 GiBps)",
            "bf16_dense_flops_per_s": _TPU_V5P + ": 459 TFLOP/s peak BF16 per chip (dense)",
            "fp8_dense_flops_per_s": _TPU_V5P + ": 459 TFLOP/s peak FP8 per chip, the BF16 rate: v5p has no "
            "faster FP8 path",
            "fp4_dense_flops_per_s": "no FP4 peak published for any TPU",
            "scaleup_bytes_per_s_per_direction": _TPU_V5P
            + ": bidirectional ICI bandwidth 1,200 GBps per chip "
            "(the older page's 4,800 Gbps is 600 GB/s, one direction) -> 600 GB/s per direction",
            "scaleup_domain_chips": _TPU_V5P + ": 8,960 chips per pod (3D torus; the largest slice is 6,144)",
            "tdp_watts": "not published: Google gives no per-chip power for TPU v5p",
        },
    ),
    _gpu(
        name="TPU v6e (Trillium)",
        vendor="Google",
        architecture="TPU v6e",
        year=2024,
        memory_bytes=32e9,
        memory_type="HBM",
        memory_bandwidth_bytes_per_s=1.638e12,
        bf16_dense_flops_per_s=918e12,
        fp8_dense_flops_per_s=918e12,
        scaleup_link="ICI (2D torus, 4 ports)",
        scaleup_bytes_per_s_per_direction=400e9,
        tdp_watts=None,
        form_factor="TPU chip (8 per host)",
        fp4_dense_flops_per_s=None,
        aliases=("v6e", "TPU v6e", "Trillium"),
        datacenter_flagship=True,
        scaleup_domain_chips=256,
        sources={
            "memory_bytes": _TPU_V6E + ": 32 GB HBM per chip",
            "memory_bandwidth_bytes_per_s": _TPU_V6E + ": 1,638 GBps",
            "bf16_dense_flops_per_s": _TPU_V6E + ": 918 TFLOP/s peak BF16 per chip (dense)",
            "fp8_dense_flops_per_s": _TPU_V7
            + ": comparison table, 918 TFLOP/s peak FP8 for v6e (the BF16 rate)",
            "fp4_dense_flops_per_s": "no FP4 peak published for any TPU",
            "scaleup_bytes_per_s_per_direction": _TPU_V6E + ": bidirectional ICI bandwidth 800 GBps per chip "
            "(4 ports) -> 400 GB/s per direction",
            "scaleup_domain_chips": _TPU_V6E + ": 256 chips per pod (2D torus)",
            "tdp_watts": "not published: Google gives no per-chip power for TPU v6e",
        },
    ),
    _gpu(
        name="TPU v7 (Ironwood)",
        vendor="Google",
        architecture="TPU v7",
        year=2025,
        memory_bytes=192e9,
        memory_type="HBM3e",
        memory_bandwidth_bytes_per_s=7.37e12,
        bf16_dense_flops_per_s=2307e12,
        fp8_dense_flops_per_s=4614e12,
        scaleup_link="ICI (3D torus)",
        scaleup_bytes_per_s_per_direction=600e9,
        tdp_watts=None,
        form_factor="TPU chip (two dies, 4 per host)",
        fp4_dense_flops_per_s=None,
        aliases=("v7", "TPU7x", "Ironwood", "TPU v7"),
        hbm_stacks=8,
        datacenter_flagship=True,
        scaleup_domain_chips=9216,
        sources={
            "memory_bytes": _IRONWOOD + ": 192 GB HBM per chip (the Cloud TPU7x page prints 192 GiB)",
            "hbm_stacks": "Google at Hot Chips 2025: eight HBM3E stacks per Ironwood chip",
            "memory_bandwidth_bytes_per_s": _IRONWOOD + ": 7.37 TB/s per chip (4.5x Trillium's)",
            "bf16_dense_flops_per_s": _TPU_V7 + ": 2,307 TFLOP/s peak BF16 per chip (dense)",
            "fp8_dense_flops_per_s": _TPU_V7 + ": 4,614 TFLOP/s peak FP8 per chip (dense)",
            "fp4_dense_flops_per_s": "no FP4 peak published for any TPU",
            "scaleup_bytes_per_s_per_direction": _IRONWOOD + ": ICI 1.2 TB/s bidirectional per chip "
            "-> 600 GB/s per direction",
            "scaleup_domain_chips": _IRONWOOD + "; " + _TPU_V7 + ": 9,216 chips per pod",
            "tdp_watts": "not published: Google gives per-pod and per-watt figures, not a per-chip power",
        },
    ),
)


def _index(gpus) -> dict[str, GPU]:
    """Normalised name and alias -> record; two records may not share a key."""
    index: dict[str, GPU] = {}
    for g in gpus:
        for key in {_norm(k) for k in (g.name, *g.aliases)}:
            if index.setdefault(key, g) is not g:
                raise ValueError(f"aliases must be unique: {key!r} names both {index[key].name} and {g.name}")
    return index


_BY_KEY = _index(_CATALOG)


def catalog(precision: str | None = None) -> list[GPU]:
    """Every catalogued GPU, oldest first; with ``precision`` ("bf16", ...), only those with a dense peak in it."""
    gpus = sorted(_CATALOG, key=lambda g: (g.year, g.name))
    return gpus if precision is None else [g for g in gpus if g.has_peak(precision)]


def gpu(name) -> GPU:
    """Look a GPU up by name; case, spaces and hyphens are ignored, short aliases ("h100") work.

    A :class:`GPU` passed in is returned unchanged, so callers may accept either.
    """
    if isinstance(name, GPU):
        return name
    if not isinstance(name, str):
        raise ValueError(f"name must be a string, got {name!r}")
    found = _BY_KEY.get(_norm(name))
    if found is None:
        raise ValueError(f"name must be one of {[g.name for g in catalog()]} (or an alias), got {name!r}")
    return found


def custom_gpu(**fields_) -> GPU:
    """A GPU that is not in the catalog, validated like the catalogued ones.

    Missing ``sources`` entries default to "user-supplied". A ``base=``
    keyword (a name or a GPU) starts from a catalogued card and overrides
    only the fields given, e.g. ``custom_gpu(base="h100", memory_bytes=94e9)``.
    """
    base = fields_.pop("base", None)
    if base is not None:
        start = base if isinstance(base, GPU) else gpu(base)
        given_sources = dict(start.sources)
        given_sources.update({k: "user-supplied" for k in fields_ if k != "sources"})
        given_sources.update(fields_.pop("sources", {}) or {})
        try:
            return replace(start, sources=given_sources, **fields_)
        except TypeError as exc:
            raise ValueError(f"custom_gpu got an unknown field: {exc}") from None
    known = {f.name for f in fields(GPU)}
    unknown = set(fields_) - known
    if unknown:
        raise ValueError(f"custom_gpu fields must be among {sorted(known)}, got unknown {sorted(unknown)}")
    required = {f.name for f in fields(GPU) if f.default is MISSING and f.default_factory is MISSING}
    missing = sorted(required - set(fields_))
    if missing:
        raise ValueError(f"custom_gpu needs the fields {missing}")
    sources = {k: "user-supplied" for k in fields_ if k != "sources"}
    sources.update(fields_.pop("sources", {}) or {})
    return GPU(sources=sources, **fields_)


# --------------------------------------------------------------------------------------
# Links
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    """One interconnect or memory interface, in bytes per second per direction.

    ``raw_spec`` is the vendor's figure as printed; ``bidirectional_in_spec``
    is True when that figure added both directions (then the per-direction
    value is half of it). ``full_duplex`` is False for memory buses, whose
    single figure is shared between reads and writes. ``joins`` says what the
    link joins inside the chapter-2 server (a DGX H100); the server's link
    table lists the links that have it.
    """

    name: str
    bytes_per_s_per_direction: float
    raw_spec: str
    bidirectional_in_spec: bool
    full_duplex: bool
    kind: str
    source: str
    notes: str = ""
    joins: str = ""

    def __post_init__(self):
        if not isinstance(self.joins, str):
            raise ValueError(f"joins must be a string, got {self.joins!r}")
        for f in ("name", "raw_spec", "source"):
            if not isinstance(getattr(self, f), str) or not getattr(self, f):
                raise ValueError(f"{f} must be a non-empty string, got {getattr(self, f)!r}")
        choice("kind", self.kind, {"memory", "scale-up", "host", "network"})
        object.__setattr__(
            self,
            "bytes_per_s_per_direction",
            _scalar_positive("bytes_per_s_per_direction", self.bytes_per_s_per_direction),
        )


_LINKS: tuple[Link, ...] = (
    Link(
        "HBM3 (H100 SXM)",
        3.35e12,
        "3.35 TB/s",
        False,
        False,
        "memory",
        _H100_WP,
        "one GPU's HBM3, reads and writes share it; the source texts also quote 3,352 GB/s",
        joins="GPU to its own memory",
    ),
    Link(
        "NVLink 4 (per GPU, 18 links)",
        450e9,
        "900 GB/s total, 18 links",
        True,
        True,
        "scale-up",
        _H100_WP,
        "the blog's 'up to 900 GB/s per link' is this per-GPU total, both directions added",
        joins="GPU to the other 7 GPUs, through 4 NVSwitch chips",
    ),
    Link(
        "NVLink 4 (one link)",
        25e9,
        "50 GB/s per link, both directions",
        True,
        True,
        "scale-up",
        _H100_WP,
        "900 GB/s / 18 links = 50 GB/s per link, 25 GB/s each way; each link is two lanes (differential "
        "pairs) per direction",
        joins="one of a GPU's 18 NVLink links (two lanes each way)",
    ),
    Link("NVLink 5 (per GPU, 18 links)", 900e9, "1.8 TB/s total, 18 links", True, True, "scale-up", _B200_DS),
    Link(
        "NVLink 5 (one link)",
        50e9,
        "100 GB/s per link, both directions",
        True,
        True,
        "scale-up",
        _B200_DS,
        "1.8 TB/s / 18 links; 50 GB/s each way (Blackwell technical brief, section 3.6)",
    ),
    Link("NVLink 3 (per GPU, 12 links)", 300e9, "600 GB/s total, 12 links", True, True, "scale-up", _A100_DS),
    Link(
        "PCIe Gen4 x16",
        32e9,
        "64 GB/s bidirectional (16 GT/s x 16 lanes)",
        True,
        True,
        "host",
        _PCIE,
        "raw signalling rate; 128b/130b encoding is NOT removed (31.5 GB/s after it)",
    ),
    Link(
        "PCIe Gen5 x16",
        64e9,
        "128 GB/s bidirectional (32 GT/s x 16 lanes)",
        True,
        True,
        "host",
        _PCIE,
        "raw signalling rate; 128b/130b encoding is NOT removed (63.0 GB/s after it)",
        joins="GPU or NIC to the CPU (through PCIe switches)",
    ),
    Link(
        "ConnectX-7 400 Gbit/s",
        50e9,
        "400 Gb/s per port",
        False,
        True,
        "network",
        "NVIDIA ConnectX-7 adapter datasheet; " + _DGX_H100,
        "line rate per direction; Ethernet/IB framing and protocol overhead not removed",
        joins="one GPU's NIC to the cluster network",
    ),
    Link(
        "ConnectX-8 800 Gbit/s",
        100e9,
        "800 Gb/s per port",
        False,
        True,
        "network",
        "NVIDIA ConnectX-8 SuperNIC firmware release notes v40.44.0208, 'Link Speed' (800 Gb/s XDR "
        "InfiniBand or 2x 400GbE)",
        "line rate per direction, the Blackwell-generation NIC; framing and protocol overhead not removed",
    ),
    Link(
        "InfiniBand NDR 400 Gbit/s",
        50e9,
        "400 Gb/s per port (4x 100G lanes)",
        False,
        True,
        "network",
        "InfiniBand Trade Association roadmap (NDR = 400 Gb/s per 4x port)",
        "line rate per direction, as ConnectX-7 runs it in a DGX H100",
    ),
    Link(
        "DDR5-4800, 8 channels (one Xeon 8480C socket)",
        307.2e9,
        "8 channels x 4800 MT/s x 8 B",
        False,
        False,
        "memory",
        "Intel Xeon Platinum 8480+ product specification (8 DDR5-4800 channels); " + _DGX_H100,
        "8 x 4.8e9 transfers/s x 8 bytes = 307.2 GB/s, shared by reads and writes",
        joins="CPU socket to its DRAM",
    ),
)

_LINKS_BY_KEY = {_norm(x.name): x for x in _LINKS}
_LINK_ALIASES = {
    "hbm3": "HBM3 (H100 SXM)",
    "nvlink4": "NVLink 4 (per GPU, 18 links)",
    "nvlink4link": "NVLink 4 (one link)",
    "nvlink5": "NVLink 5 (per GPU, 18 links)",
    "nvlink5link": "NVLink 5 (one link)",
    "nvlink3": "NVLink 3 (per GPU, 12 links)",
    "pcie4": "PCIe Gen4 x16",
    "pcie5": "PCIe Gen5 x16",
    "pciegen4": "PCIe Gen4 x16",
    "pciegen5": "PCIe Gen5 x16",
    "connectx7": "ConnectX-7 400 Gbit/s",
    "cx7": "ConnectX-7 400 Gbit/s",
    "connectx8": "ConnectX-8 800 Gbit/s",
    "cx8": "ConnectX-8 800 Gbit/s",
    "ndr": "InfiniBand NDR 400 Gbit/s",
    "infinibandndr": "InfiniBand NDR 400 Gbit/s",
    "ddr5": "DDR5-4800, 8 channels (one Xeon 8480C socket)",
    "xeon8480c": "DDR5-4800, 8 channels (one Xeon 8480C socket)",
}
_LINKS_BY_KEY.update({k: _LINKS_BY_KEY[_norm(v)] for k, v in _LINK_ALIASES.items()})


def links() -> list[Link]:
    """Every catalogued link, fastest first."""
    return sorted(_LINKS, key=lambda x: -x.bytes_per_s_per_direction)


def link(name: str) -> Link:
    """Look a link up by name or alias ("nvlink4", "pcie5", "cx7", "ddr5"); case and punctuation ignored."""
    if not isinstance(name, str):
        raise ValueError(f"name must be a string, got {name!r}")
    found = _LINKS_BY_KEY.get(_norm(name))
    if found is None:
        raise ValueError(f"name must be one of {[x.name for x in _LINKS]} (or an alias), got {name!r}")
    return found


# --------------------------------------------------------------------------------------
# Servers
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Server:
    """A multi-GPU server, as described by its vendor's user guide."""

    name: str
    gpu: GPU
    n_gpus: int
    n_nvswitches: int
    compute_nic: Link
    n_compute_nics: int
    cpu: str
    n_cpu_sockets: int
    cpu_cores_per_socket: int
    cpu_memory_link: Link
    system_memory_bytes: float
    max_power_watts: float
    source: str
    internal_links: tuple[Link, ...] = ()

    @property
    def gpu_memory_bytes(self) -> float:
        """All GPUs' memory together."""
        return self.gpu.memory_bytes * self.n_gpus

    @property
    def scaleout_bytes_per_s_per_direction(self) -> float:
        """All compute-fabric NICs together, one direction."""
        return self.compute_nic.bytes_per_s_per_direction * self.n_compute_nics


DGX_H100 = Server(
    name="DGX H100",
    gpu=gpu("H100 SXM"),
    n_gpus=8,
    n_nvswitches=4,
    compute_nic=link("ConnectX-7 400 Gbit/s"),
    n_compute_nics=8,
    cpu="Intel Xeon Platinum 8480C",
    n_cpu_sockets=2,
    cpu_cores_per_socket=56,
    cpu_memory_link=link("ddr5"),
    system_memory_bytes=2e12,
    max_power_watts=10.2e3,
    source=_DGX_H100
    + ": 8x H100 SXM (640 GB total), 4 NVSwitch, 8 single-port ConnectX-7 (400 Gb/s InfiniBand/"
    "Ethernet) for the compute fabric, 2 dual-port ConnectX-7 for storage, 2x Xeon 8480C (56 cores each), "
    "2 TB DDR5, ~10.2 kW max",
    internal_links=(
        link("HBM3 (H100 SXM)"),
        link("NVLink 4 (per GPU, 18 links)"),
        link("ddr5"),
        link("PCIe Gen5 x16"),
        link("ConnectX-7 400 Gbit/s"),
    ),
)
"""The machine of chapter 2. ``DGX_H100.internal_links`` is its link table, fastest first,
every entry per direction: HBM3 to one GPU, NVLink 4 out of one GPU, one CPU socket's DDR5,
the PCIe Gen5 x16 slot of a NIC, one ConnectX-7 port (HBM / NIC = 67x)."""


def ratio(fast: Link | GPU | str, slow: Link | GPU | str) -> float:
    """How many times faster ``fast`` is than ``slow``, per direction (links by name, or GPUs' memory).

    HBM3 on an H100 against one ConnectX-7 port: 3.35e12 / 5e10 = 67.
    """

    def rate(x):
        if isinstance(x, GPU):
            return x.memory_bandwidth_bytes_per_s
        if isinstance(x, Link):
            return x.bytes_per_s_per_direction
        if isinstance(x, str):
            return link(x).bytes_per_s_per_direction
        raise ValueError(f"ratio takes Link, GPU or link names, got {x!r}")

    return rate(fast) / rate(slow)


def generations(names=None) -> list[GPU]:
    """The data-center flagships of the catalog (or the GPUs named in ``names``), by year.

    Ties keep catalog order (or the order of ``names``).
    """
    if names is None:
        return [g for g in catalog() if g.datacenter_flagship]
    if isinstance(names, str) or not names:
        raise ValueError(f"names must be a non-empty sequence of GPU names, got {names!r}")
    return sorted((gpu(n) for n in names), key=lambda g: g.year)


def server_links(names=None) -> list[Link]:
    """The links a byte can cross inside one DGX H100 (those with ``joins``), or those named in ``names``; fastest first."""
    if names is None:
        return [x for x in links() if x.joins]
    if isinstance(names, str) or not names:
        raise ValueError(f"names must be a non-empty sequence of link names, got {names!r}")
    return sorted((link(n) for n in names), key=lambda x: -x.bytes_per_s_per_direction)


@dataclass(frozen=True)
class WeightFormat:
    """A block-scaled weight format: ``bits`` per element plus one ``scale_bytes`` scale per block.

    A block is ``block_elements`` consecutive weights of a row (``block_rows``
    rows of them for a 2-D tile), so the stored bytes per weight are
    ``bits / 8 + scale_bytes / (block_elements block_rows)``
    (:attr:`bytes_per_weight`). ``peak`` names the tensor-core rate it runs at
    (:meth:`GPU.dense_flops_per_s`). A per-tensor scale (NVFP4's FP32 one) is
    a few bytes per matrix and left out. Chapter 2.
    """

    name: str
    bits: int
    block_elements: int
    block_rows: int
    scale_bytes: int
    peak: str
    source: str

    @property
    def bytes_per_weight(self) -> float:
        """Stored bytes per weight, its block's scale included."""
        return self.bits / 8 + self.scale_bytes / (self.block_elements * self.block_rows)


#: The block-scaled formats of 2025-2026 serving, smallest scale overhead last.
WEIGHT_FORMATS = (
    WeightFormat(
        "FP8 (128 x 128 blocks)",
        8,
        128,
        128,
        4,
        "fp8",
        "DeepSeek-V3 checkpoint config.json, quantization_config: e4m3, weight_block_size [128, 128], "
        "one FP32 scale_inv per block",
    ),
    WeightFormat(
        "NVFP4",
        4,
        16,
        1,
        1,
        "fp4",
        "NVIDIA technical blog 'Introducing NVFP4 for Efficient and Accurate Low-Precision Inference' "
        "(June 2025): E2M1 values, one FP8 (E4M3) scale per 16 values, one FP32 scale per tensor",
    ),
    WeightFormat(
        "MXFP4",
        4,
        32,
        1,
        1,
        "fp4",
        "OCP Microscaling Formats (MX) Specification v1.0 (2023): E2M1 values, one E8M0 scale per 32",
    ),
)


def weight_format(name: str) -> WeightFormat:
    """The :data:`WEIGHT_FORMATS` record called ``name`` (case and spaces ignored)."""
    for f in WEIGHT_FORMATS:
        if _norm(f.name) == _norm(name):
            return f
    raise ValueError(f"name must be one of {[f.name for f in WEIGHT_FORMATS]}, got {name!r}")


@dataclass(frozen=True)
class ScaleUpDomain:
    """A group of GPUs joined all-to-all by one switched link (an NVLink domain).

    ``link`` is the catalog name of the per-GPU link (all its links);
    ``n_cpus`` the host CPUs attached to the domain's GPUs (over PCIe, or
    NVLink-C2C for Grace): they hang off the GPUs and are not ports of the
    switch fabric. ``quoted_bytes_per_s`` is the vendor's own round figure for
    the domain, both directions of every GPU added (None if it quotes none).
    """

    name: str
    n_gpus: int
    link: str
    n_cpus: int
    source: str
    quoted_bytes_per_s: float | None = None

    def __post_init__(self):
        check("n_gpus", self.n_gpus, "int>=1", scalar=True)
        if self.quoted_bytes_per_s is not None:
            check("quoted_bytes_per_s", self.quoted_bytes_per_s, ">0", scalar=True)
        check("n_cpus", self.n_cpus, "int>=0", scalar=True)
        link(self.link)  # raises ValueError for an unknown link
        if (
            not isinstance(self.name, str)
            or not self.name
            or not isinstance(self.source, str)
            or not self.source
        ):
            raise ValueError("name and source must be non-empty strings")

    @property
    def link_bytes_per_s_per_direction(self) -> float:
        """One GPU's scale-up bandwidth (all its links), one direction."""
        return link(self.link).bytes_per_s_per_direction


#: One DGX H100: 8 GPUs, NVLink 4 through 4 NVSwitch chips, 2 Xeon sockets on PCIe
#: (the whitepaper's "7.2 TB/s total GPU-to-GPU" is 8 x 900 GB/s, both directions).
DGX_H100_DOMAIN = ScaleUpDomain(
    "DGX H100",
    8,
    "NVLink 4 (per GPU, 18 links)",
    2,
    _DGX_H100 + "; H100 whitepaper V1.04, section 7.3 (7.2 TB/s)",
    7.2e12,
)
#: One GB200 NVL72 rack: 72 Blackwell GPUs in one NVLink 5 switch domain (18 compute trays, 9 NVLink
#: switch trays). Its 36 Grace CPUs each attach to two GPUs over NVLink-C2C, outside the switch fabric.
#: NVIDIA quotes 130 TB/s for the domain, a rounding of 72 x 1.8 TB/s (both directions).
GB200_NVL72 = ScaleUpDomain(
    "GB200 NVL72",
    72,
    "NVLink 5 (per GPU, 18 links)",
    36,
    "NVIDIA GB200 NVL72 product page (2024); NVIDIA Blackwell Architecture Technical Brief "
    "v2.1, section 3.6 (130 TB/s, 18 links of 50 GB/s per direction); NVIDIA developer blog "
    "'GB200 NVL72 Delivers Trillion-Parameter LLM Training' (2024): Grace to GPUs over "
    "NVLink-C2C",
    130e12,
)


def mig_instance(base: GPU | str, profile: str) -> GPU:
    """One MIG instance of ``base`` as a GPU of its own: nominal shares of its memory, bandwidth and compute.

    An instance of ``c`` compute slices and ``m`` memory slices gets ``m/8``
    of the capacity and, since it owns its memory controllers and DRAM bus,
    ``m/8`` of the bandwidth, and ``c/7`` of every tensor-core peak. The
    shares are nominal: a 1g.10gb slice of an H100 has 16 of the 132 SMs
    (12 %, not 14 %), and the driver reports a little less memory. Chapter 2.
    """
    g = base if isinstance(base, GPU) else gpu(base)
    if not g.mig_profiles:
        choice("base", g.name, {x.name for x in catalog() if x.mig_profiles})
    p = g.mig_profile(profile)
    mem, comp = p.memory_slices / MIG_MEMORY_SLICES, p.compute_slices / MIG_COMPUTE_SLICES
    peaks = {f: getattr(g, f) * comp for f in _PEAK_FIELDS if getattr(g, f) is not None}
    shares = {
        "memory_bytes": g.memory_bytes * mem,
        "memory_bandwidth_bytes_per_s": g.memory_bandwidth_bytes_per_s * mem,
    }
    return custom_gpu(
        base=g,
        name=f"{g.name} MIG {p.name}",
        aliases=(),
        datacenter_flagship=False,
        mig_profiles=(),
        sources={k: _MIG_SOURCE for k in (*peaks, *shares)},
        **peaks,
        **shares,
    )


__all__ = [
    "GPU",
    "SourceMap",
    "Link",
    "Server",
    "DGX_H100",
    "catalog",
    "gpu",
    "custom_gpu",
    "links",
    "link",
    "ratio",
    "generations",
    "server_links",
    "ScaleUpDomain",
    "DGX_H100_DOMAIN",
    "GB200_NVL72",
    "MigProfile",
    "MIG_COMPUTE_SLICES",
    "MIG_MEMORY_SLICES",
    "mig_instance",
    "WeightFormat",
    "WEIGHT_FORMATS",
    "weight_format",
]
