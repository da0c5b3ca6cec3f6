"""Peak dense matmul throughput of accelerators, per device and number format, and their peak
memory (HBM) bandwidth, with sources.

Every figure is the vendor's dense (not 2:4-sparse) tensor-core peak in FLOP/s per device; where
a datasheet states only the sparse figure (marked "with sparsity"), the dense one is half of it.
These are the denominators of MFU; the numerators are flopsreg's exact counts. The bandwidths
(:data:`BANDWIDTHS`, one per device of the peaks) are the denominators of MBU.

The ranges a measured number must lie in (:data:`STEP_TIME`, :data:`TOKENS_PER_SECOND`,
:data:`PEAK`) live here too, next to :func:`exact_number`, which reads every number a user gives.
"""

from __future__ import annotations

import math
from fractions import Fraction

import attrs

from flopsreg.errors import ModelError, did_you_mean
from flopsreg.model import as_int, shown

__all__ = [
    "BANDWIDTH", "BANDWIDTHS", "PEAK", "PEAKS", "STEP_TIME", "TOKENS_PER_SECOND", "Bandwidth", "Bounds", "Peak",
    "bandwidth_bytes", "device_bandwidth", "exact_number", "number_from_text", "peak_flops",
]

_T = 10**12  # tera
_NVIDIA_A100 = "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf): BF16 312 TFLOPS dense"
_NVIDIA_H100 = "NVIDIA H100 datasheet (nvidia.com/en-us/data-center/h100/): {} TFLOPS with sparsity, dense is half"
_NVIDIA_H200 = "NVIDIA H200 datasheet (nvidia.com/en-us/data-center/h200/): {} TFLOPS with sparsity, dense is half"
_NVIDIA_HGX = "NVIDIA HGX B200 specifications (nvidia.com/en-us/data-center/hgx/): {} PFLOPS per 8 GPUs with sparsity; dense per GPU is a sixteenth"
_NVIDIA_GB200 = "NVIDIA GB200 NVL72 specifications (nvidia.com/en-us/data-center/gb200-nvl72/): {} PFLOPS per GB200 superchip (2 GPUs) with sparsity; dense per GPU is a quarter"
_AMD = "AMD Instinct {} data sheet (amd.com/en/products/accelerators/instinct/{}): {} TFLOPS dense"
_TPU = "Google Cloud TPU {} documentation (cloud.google.com/tpu/docs/{}): {} TFLOPS BF16 per chip"
_GAUDI3 = "Intel Gaudi 3 AI Accelerator white paper (intel.com, document 817486): 1835 TFLOPS BF16 and FP8 matrix (MME)"


@attrs.frozen
class Peak:
    """One accelerator's dense peak for one number format."""

    name: str  # e.g. "h100-sxm-bf16"
    device: str
    dtype: str
    flops: int  # FLOP/s per device, dense
    source: str


PEAKS: dict[str, Peak] = {
    peak.name: peak
    for peak in (
        Peak(name="a100-sxm-bf16", device="NVIDIA A100 SXM", dtype="bf16", flops=312 * _T, source=_NVIDIA_A100),
        Peak(name="a100-pcie-bf16", device="NVIDIA A100 PCIe", dtype="bf16", flops=312 * _T, source=_NVIDIA_A100),
        Peak(name="h100-sxm-bf16", device="NVIDIA H100 SXM", dtype="bf16", flops=9895 * _T // 10, source=_NVIDIA_H100.format("BF16 1,979")),
        Peak(name="h100-sxm-fp8", device="NVIDIA H100 SXM", dtype="fp8", flops=1979 * _T, source=_NVIDIA_H100.format("FP8 3,958")),
        Peak(name="h100-pcie-bf16", device="NVIDIA H100 PCIe", dtype="bf16", flops=7565 * _T // 10, source=_NVIDIA_H100.format("BF16 1,513 (PCIe)")),
        Peak(name="h100-pcie-fp8", device="NVIDIA H100 PCIe", dtype="fp8", flops=1513 * _T, source=_NVIDIA_H100.format("FP8 3,026 (PCIe)")),
        Peak(name="h200-bf16", device="NVIDIA H200 SXM", dtype="bf16", flops=9895 * _T // 10, source=_NVIDIA_H200.format("BF16 1,979")),
        Peak(name="h200-fp8", device="NVIDIA H200 SXM", dtype="fp8", flops=1979 * _T, source=_NVIDIA_H200.format("FP8 3,958")),
        Peak(name="b200-bf16", device="NVIDIA B200 (HGX)", dtype="bf16", flops=2250 * _T, source=_NVIDIA_HGX.format("FP16/BF16 36")),
        Peak(name="b200-fp8", device="NVIDIA B200 (HGX)", dtype="fp8", flops=4500 * _T, source=_NVIDIA_HGX.format("FP8 72")),
        Peak(name="gb200-bf16", device="NVIDIA GB200 (per Blackwell GPU)", dtype="bf16", flops=2500 * _T, source=_NVIDIA_GB200.format("FP16/BF16 10")),
        Peak(name="gb200-fp8", device="NVIDIA GB200 (per Blackwell GPU)", dtype="fp8", flops=5000 * _T, source=_NVIDIA_GB200.format("FP8 20")),
        Peak(name="mi300x-bf16", device="AMD Instinct MI300X", dtype="bf16", flops=13074 * _T // 10, source=_AMD.format("MI300X", "mi300/mi300x.html", "BF16 1,307.4")),
        Peak(name="mi300x-fp8", device="AMD Instinct MI300X", dtype="fp8", flops=26149 * _T // 10, source=_AMD.format("MI300X", "mi300/mi300x.html", "FP8 2,614.9")),
        Peak(name="mi325x-bf16", device="AMD Instinct MI325X", dtype="bf16", flops=13074 * _T // 10, source=_AMD.format("MI325X", "mi300/mi325x.html", "BF16 1,307.4")),
        Peak(name="mi325x-fp8", device="AMD Instinct MI325X", dtype="fp8", flops=26149 * _T // 10, source=_AMD.format("MI325X", "mi300/mi325x.html", "FP8 2,614.9")),
        Peak(name="mi355x-bf16", device="AMD Instinct MI355X", dtype="bf16", flops=25166 * _T // 10, source=_AMD.format("MI355X", "mi350/mi355x.html", "BF16 2,516.6")),
        Peak(name="mi355x-fp8", device="AMD Instinct MI355X", dtype="fp8", flops=50332 * _T // 10, source=_AMD.format("MI355X", "mi350/mi355x.html", "FP8 5,033.2")),
        Peak(name="tpu-v5e-bf16", device="Google TPU v5e", dtype="bf16", flops=197 * _T, source=_TPU.format("v5e", "v5e", "197")),
        Peak(name="tpu-v5p-bf16", device="Google TPU v5p", dtype="bf16", flops=459 * _T, source=_TPU.format("v5p", "v5p", "459")),
        Peak(name="tpu-v6e-bf16", device="Google TPU v6e (Trillium)", dtype="bf16", flops=918 * _T, source=_TPU.format("v6e", "v6e", "918")),
        Peak(name="gaudi3-bf16", device="Intel Gaudi 3", dtype="bf16", flops=1835 * _T, source=_GAUDI3),
        Peak(name="gaudi3-fp8", device="Intel Gaudi 3", dtype="fp8", flops=1835 * _T, source=_GAUDI3),
    )
}


@attrs.frozen
class Bandwidth:
    """One accelerator's peak memory (HBM) bandwidth, as its datasheet states it."""

    name: str  # e.g. "h100-sxm"
    device: str  # as the peaks name it: every Peak.device has one
    bytes_per_second: int  # per device, decimal units (1 TB/s = 10**12 bytes/s), as datasheets count
    source: str


_G = 10**9  # giga: datasheets give GB/s and TB/s in powers of ten
_BW_A100 = "NVIDIA A100 datasheet (nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf): {} (80GB; the 40GB A100 has 1,555 GB/s)"
_BW_HOPPER = "NVIDIA {} datasheet (nvidia.com/en-us/data-center/{}/): GPU memory bandwidth {}"
_BW_HGX = "NVIDIA HGX B200 specifications (nvidia.com/en-us/data-center/hgx/): 64 TB/s HBM3e per 8 GPUs, 8 TB/s each"
_BW_GB200 = "NVIDIA GB200 NVL72 specifications (nvidia.com/en-us/data-center/gb200-nvl72/): 16 TB/s HBM3e per GB200 superchip (2 GPUs), 8 TB/s each"
_BW_AMD = "AMD Instinct {} data sheet (amd.com/en/products/accelerators/instinct/{}): peak memory bandwidth {}"
_BW_TPU = "Google Cloud TPU {} documentation (cloud.google.com/tpu/docs/{}): HBM bandwidth {} per chip"
_BW_GAUDI3 = "Intel Gaudi 3 AI Accelerator white paper (intel.com, document 817486): 128 GB HBM2e, 3.7 TB/s"

BANDWIDTHS: dict[str, Bandwidth] = {
    bw.name: bw
    for bw in (
        Bandwidth("a100-sxm", "NVIDIA A100 SXM", 2039 * _G, _BW_A100.format("SXM 2,039 GB/s")),
        Bandwidth("a100-pcie", "NVIDIA A100 PCIe", 1935 * _G, _BW_A100.format("PCIe 1,935 GB/s")),
        Bandwidth("h100-sxm", "NVIDIA H100 SXM", 3350 * _G, _BW_HOPPER.format("H100", "h100", "3.35 TB/s (SXM)")),
        Bandwidth("h100-pcie", "NVIDIA H100 PCIe", 2000 * _G, _BW_HOPPER.format("H100", "h100", "2 TB/s (PCIe)")),
        Bandwidth("h200", "NVIDIA H200 SXM", 4800 * _G, _BW_HOPPER.format("H200", "h200", "4.8 TB/s")),
        Bandwidth("b200", "NVIDIA B200 (HGX)", 8000 * _G, _BW_HGX),
        Bandwidth("gb200", "NVIDIA GB200 (per Blackwell GPU)", 8000 * _G, _BW_GB200),
        Bandwidth("mi300x", "AMD Instinct MI300X", 5300 * _G, _BW_AMD.format("MI300X", "mi300/mi300x.html", "5.3 TB/s")),
        Bandwidth("mi325x", "AMD Instinct MI325X", 6000 * _G, _BW_AMD.format("MI325X", "mi300/mi325x.html", "6 TB/s")),
        Bandwidth("mi355x", "AMD Instinct MI355X", 8000 * _G, _BW_AMD.format("MI355X", "mi350/mi355x.html", "8 TB/s")),
        Bandwidth("tpu-v5e", "Google TPU v5e", 819 * _G, _BW_TPU.format("v5e", "v5e", "819 GB/s")),
        Bandwidth("tpu-v5p", "Google TPU v5p", 2765 * _G, _BW_TPU.format("v5p", "v5p", "2,765 GB/s")),
        Bandwidth("tpu-v6e", "Google TPU v6e (Trillium)", 1640 * _G, _BW_TPU.format("v6e", "v6e", "1,640 GB/s")),
        Bandwidth("gaudi3", "Intel Gaudi 3", 3700 * _G, _BW_GAUDI3),
    )
}
_BY_DEVICE = {bw.device: bw for bw in BANDWIDTHS.values()}


def device_bandwidth(peak: Peak) -> Bandwidth:
    """The memory bandwidth of the device a peak entry names."""
    return _BY_DEVICE[peak.device]


@attrs.frozen
class Bounds:
    """The inclusive range a measured number must lie in, and what it measures (for the message)."""

    low: str  # decimal text, e.g. "1e-9"
    high: str
    what: str  # e.g. "seconds per step"

    def check(self, field: str, value: object) -> Fraction:
        """*value* (a Python or numpy number, a 0-d array, or decimal text) as an exact Fraction in
        the range; anything else is a :class:`ModelError` naming *field*, the value and the range."""
        number = number_from_text(value) if isinstance(value, str) else exact_number(value)
        if number is None or not Fraction(self.low) <= number <= Fraction(self.high):
            raise ModelError(f"{field}: {shown(value)}: expected {self.what}, a number from {self.low} to {self.high}")
        return number


# What a user may give for a measured step: physically generous, so that only a unit or typing
# mistake falls outside (docs/serving.md lists them).
STEP_TIME = Bounds("1e-9", "1e7", "seconds per step")  # 1 ns to 116 days
TOKENS_PER_SECOND = Bounds("1e-6", "1e12", "tokens per second per device")
PEAK = Bounds("1", "1e21", "FLOP/s per device")  # 1e21 is a thousand times today's largest FP8 peak
BANDWIDTH = Bounds("1", "1e16", "bytes/s per device")  # 1e16 is a thousand times today's largest HBM bandwidth

_TEXT_LIMIT = 64  # characters of a number given as text: a longer one is no measurement


def peak_flops(peak: str | int | float | Fraction) -> Fraction:
    """FLOP/s per device: a table entry's name, or a positive number (exact as written)."""
    if isinstance(peak, str):
        entry = PEAKS.get(peak.strip().lower())
        if entry is None:
            if _numeric(peak):
                return PEAK.check("peak", peak)
            starting = [name for name in PEAKS if name.startswith(peak.strip().lower())]
            hint = f" (names starting so: {', '.join(starting)})" if starting else f"{did_you_mean(peak, PEAKS)} (flopsreg peaks lists them)"
            raise ModelError(f"peak: {peak!r} is neither FLOP/s nor a known accelerator{hint}")
        return Fraction(entry.flops)
    return PEAK.check("peak", peak)


def bandwidth_bytes(bandwidth: str | int | float | Fraction) -> Fraction:
    """Memory bytes/s per device: a bandwidth entry's name (``h100-sxm``), a peak entry's name
    (its device's bandwidth: ``h100-sxm-bf16``), or a positive number (exact as written)."""
    if isinstance(bandwidth, str):
        key = bandwidth.strip().lower()
        entry = BANDWIDTHS.get(key) or (device_bandwidth(PEAKS[key]) if key in PEAKS else None)
        if entry is None:
            if _numeric(bandwidth):
                return BANDWIDTH.check("bandwidth", bandwidth)
            hint = did_you_mean(key, [*BANDWIDTHS, *PEAKS])
            raise ModelError(f"bandwidth: {bandwidth!r} is neither bytes/s nor a known accelerator{hint} (flopsreg peaks lists them)")
        return Fraction(entry.bytes_per_second)
    return BANDWIDTH.check("bandwidth", bandwidth)


def _numeric(text: str) -> bool:
    """Whether *text* reads as a number (``inf`` and ``1e999`` too), so that its error is the range, not the names."""
    try:
        float(text)
    except ValueError:
        return number_from_text(text) is not None
    return True


def exact_number(value: object) -> Fraction | None:
    """*value* as an exact Fraction, or None when it is not one finite real number.

    Python ints, floats and Fractions, numpy scalars of any numeric dtype and 0-d arrays (duck
    typed: numpy is not imported) are read; a float as its shortest decimal (1.5 -> 3/2, numpy's
    float32 0.1 -> 1/10). Bools, text, arrays of other shapes, nan and inf are None, and so is a
    value beyond a float's range, found before any big integer is built (Decimal("1e-100000000")).
    """
    if isinstance(value, (int, Fraction)) and not isinstance(value, bool):
        return Fraction(value)
    integer = as_int(value)  # numpy integers, 0-d integer arrays
    if integer is not None:
        return Fraction(integer)
    if isinstance(value, (bool, str, bytes)) or getattr(value, "shape", ()) != () or getattr(getattr(value, "dtype", None), "kind", "") == "b":
        return None
    if not isinstance(value, float) and not hasattr(value, "as_integer_ratio") and callable(getattr(value, "item", None)):
        item = value.item()  # a 0-d array (numpy's, torch's): its Python scalar
        return exact_number(item) if type(item) in (int, float) else None
    try:
        approx = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    if not math.isfinite(approx):
        return None
    if approx == 0:  # zero, or an underflow whose exact form could be enormous
        return Fraction(0) if value == 0 else None
    if isinstance(value, float):  # numpy's float64 too, whose repr is "np.float64(1.5)"
        return Fraction(float.__repr__(value))
    try:
        return Fraction(str(value)) if hasattr(value, "as_integer_ratio") else Fraction(repr(approx))
    except (ValueError, ZeroDivisionError):
        return Fraction(repr(approx))


def number_from_text(text: str) -> Fraction | None:
    """Decimal text (``1.5``, ``2e-3``, ``3/2``) as an exact Fraction, or None when it is none.

    The magnitude is read as a float first, so ``1e100000000`` is None at once instead of a
    Fraction building a 100-million-digit integer; nan and inf are None too.
    """
    text = text.strip()
    if len(text) > _TEXT_LIMIT:
        return None
    try:
        approx = float(text)
    except ValueError:  # "3/2", or no number: Fraction reads the first, bounded by the length
        approx = None
    if approx is not None and not math.isfinite(approx):
        return None
    if approx == 0:  # an underflow ("1e-999") or a zero with any exponent: only the second is 0
        return Fraction(0) if not any(digit in "123456789" for digit in text.lower().partition("e")[0]) else None
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None
