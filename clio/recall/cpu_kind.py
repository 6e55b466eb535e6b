"""What this CPU does for the judge's int8 products (:mod:`clio.recall.judge`): whether it has
VNNI, the x86 instructions that multiply and add bytes in one step.

Without VNNI (AMD Zen 2 and 3, Intel client CPUs before Ice Lake, AVX-512 without its VNNI part)
onnxruntime reads the judge's exact products with wider ones, and the judge takes about four times
as long as on a CPU with VNNI (docs/memory.md, "The judge reads alike on every CPU"). ``clio
encoder`` says so, and the benches print it beside their timings, since a figure from one kind of
CPU says little about the other.

Reading the flags is pure (:func:`has_vnni`); :func:`this_cpu` reads them from Linux's
``/proc/cpuinfo``. Elsewhere, and on CPUs that are not x86 (arm64 has its own dot products,
which onnxruntime reads exactly), the answer is None: nothing to say.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path

VNNI_FLAGS = frozenset(("avx512_vnni", "avx_vnni"))  # as Linux names them: AVX-512's, and AVX's (Alder Lake on)
X86 = frozenset(("x86_64", "amd64", "i386", "i686", "x86"))
CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True)
class Cpu:
    name: str  # the model name the kernel gives, or the machine's kind
    vnni: bool | None  # None: not an x86 CPU, or its flags could not be read


def has_vnni(cpuinfo: str, machine: str) -> bool | None:
    """Whether the CPU that ``cpuinfo`` (``/proc/cpuinfo``'s text) describes has VNNI; None when
    ``machine`` (``platform.machine()``) is not x86 or the text lists no flags. Pure."""
    if machine.lower() not in X86:
        return None
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "flags":
            return not VNNI_FLAGS.isdisjoint(value.split())
    return None


def model_name(cpuinfo: str) -> str | None:
    """The first ``model name`` in ``cpuinfo``, or None. Pure."""
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "model name" and value.strip():
            return " ".join(value.split())
    return None


def this_cpu(cpuinfo: Path = CPUINFO) -> Cpu:
    """This machine's CPU, as far as the kernel tells it."""
    machine = platform.machine()
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return Cpu(machine or "unknown", None)
    return Cpu(model_name(text) or machine or "unknown", has_vnni(text, machine))


def describe(cpu: Cpu) -> str:
    """One line for a bench's header: the CPU and what it does for int8 products."""
    how = {True: "VNNI", False: "no VNNI: the judge's exact int8 products take longer here", None: "VNNI not applicable or unknown"}
    return f"{cpu.name} ({how[cpu.vnni]})"
