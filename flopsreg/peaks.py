"""Peak dense matmul throughput of accelerators, per device and number format, with sources.

Every figure is the vendor's dense (not 2:4-sparse) tensor-core peak in FLOP/s per device; where
a datasheet states only the sparse figure (marked "with sparsity"), the dense one is half of it.
These are the denominators of MFU; the numerators are flopsreg's exact counts.
"""

from __future__ import annotations

from fractions import Fraction

import attrs

from flopsreg.errors import ModelError, did_you_mean

__all__ = ["PEAKS", "Peak", "peak_flops"]

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


def peak_flops(peak: str | int | float | Fraction) -> Fraction:
    """FLOP/s per device: a table entry's name, or a positive number (exact as written)."""
    if isinstance(peak, str):
        entry = PEAKS.get(peak.strip().lower())
        if entry is None:
            try:
                return peak_flops(Fraction(peak.strip()))
            except (ValueError, ZeroDivisionError):
                pass
            starting = [name for name in PEAKS if name.startswith(peak.strip().lower())]
            hint = f" (names starting so: {', '.join(starting)})" if starting else f"{did_you_mean(peak, PEAKS)} (flopsreg peaks lists them)"
            raise ModelError(f"peak: {peak!r} is neither FLOP/s nor a known accelerator{hint}")
        return Fraction(entry.flops)
    value = exact_number(peak)
    if value is None or value <= 0:
        raise ModelError(f"peak: {peak!r}: expected FLOP/s per device (a number > 0) or a name from flopsreg peaks")
    return value


def exact_number(value: object) -> Fraction | None:
    """*value* as an exact Fraction (a float as its shortest decimal, 1.5 -> 3/2), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return Fraction(repr(value)) if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, (int, Fraction)):
        return Fraction(value)
    try:
        return Fraction(str(value)) if hasattr(value, "as_integer_ratio") else None
    except (ValueError, ZeroDivisionError):
        return None
