"""What ``clio encoder`` tells of the helper's judge (issue 32; clio.app.encoder_status,
clio.recall.cpu_kind): whether it reads, what a read has cost lately, and, on an x86 CPU without
VNNI, where its exact int8 products are several times slower, that it is so and how to turn it
off. The CPU's flags are read from the kernel's text, pure."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from clio.app.encoder_status import Configured, configured, judge_line, status
from clio.recall.cpu_kind import Cpu, describe, has_vnni, model_name, this_cpu
from clio.recall.encoder_client import ENV_SWITCH
from clio.recall.encoder_models import MINILM, MPNET, endpoint_model

ZEN3 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7763 64-Core Processor
flags\t\t: fpu vme sse sse2 avx avx2 fma bmi2 sha_ni vaes vpclmulqdq
"""
ICE_LAKE = ZEN3.replace("AMD EPYC 7763 64-Core Processor", "Intel(R) Xeon(R) Platinum 8375C").replace(
    "vpclmulqdq", "vpclmulqdq avx512f avx512bw avx512_vnni"
)
ALDER_LAKE = ZEN3.replace("vpclmulqdq", "vpclmulqdq avx_vnni")
SKYLAKE_X = ZEN3.replace("vpclmulqdq", "avx512f avx512bw avx512vl")  # AVX-512 without its VNNI part
GRAVITON = "processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd asimddp sve\n"

NO_VNNI = Cpu("AMD EPYC 7763 64-Core Processor", False)
VNNI = Cpu("Intel(R) Xeon(R) Platinum 8375C", True)


def test_vnni_is_read_from_the_kernels_flags() -> None:
    assert has_vnni(ZEN3, "x86_64") is False
    assert has_vnni(SKYLAKE_X, "x86_64") is False
    assert has_vnni(ICE_LAKE, "x86_64") is True
    assert has_vnni(ALDER_LAKE, "AMD64") is True
    assert has_vnni(GRAVITON, "aarch64") is None  # arm64's dot products are exact: nothing to say
    assert has_vnni(ICE_LAKE, "arm64") is None
    assert has_vnni("processor\t: 0\n", "x86_64") is None  # no flags listed: unknown
    assert has_vnni("flags : avx2 avx512_vnnix\n", "x86_64") is False  # whole flags only
    assert model_name(ZEN3) == "AMD EPYC 7763 64-Core Processor" and model_name(GRAVITON) is None
    assert describe(NO_VNNI).endswith("(no VNNI: the judge's exact int8 products take longer here)")
    assert describe(VNNI) == "Intel(R) Xeon(R) Platinum 8375C (VNNI)"


def test_this_cpu_reads_the_file_it_is_given_and_takes_a_missing_one_as_unknown(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(ZEN3)
    got = this_cpu(info)
    assert got.name == "AMD EPYC 7763 64-Core Processor"
    assert got.vnni is (False if platform.machine().lower() in ("x86_64", "amd64") else None)
    gone = this_cpu(tmp_path / "none")
    assert gone.vnni is None and gone.name


def test_the_judge_line_says_what_it_costs_and_how_to_turn_it_off_where_it_is_slow() -> None:
    read = {"judge": True, "judged": 12, "judge_ms": 71.3}
    assert judge_line(MINILM, True, read, VNNI) == (
        "its judge: on (recall_judge), 71 ms a searched message (the median of its latest reads; 12 since the helper started)"
    )
    slow = judge_line(MINILM, True, read, NO_VNNI)
    assert slow.startswith("its judge: on (recall_judge), 71 ms a searched message")
    assert slow.endswith(
        "; this CPU (AMD EPYC 7763 64-Core Processor) has no VNNI, on which the judge is several times slower:"
        " recall_judge: false in $CLIO_HOME/config.yaml turns it off"
    )
    # off: nothing to turn off, whatever the CPU
    assert judge_line(MINILM, False, read, NO_VNNI) == "its judge: off (recall_judge: false)"
    assert judge_line(MPNET, True, None, VNNI) == "its judge: on (recall_judge): the helper loads it as it starts"
    loading = judge_line(MINILM, True, {"judge": False, "judged": 0, "judge_ms": None}, Cpu("x", None))
    assert loading == "its judge: on (recall_judge), not loaded yet (the first searched message loads it)"
    idle = judge_line(MINILM, True, {"judge": True, "judged": 0, "judge_ms": None}, VNNI)
    assert idle == "its judge: on (recall_judge), loaded, no message read yet"
    # a helper of an older clio, without the figures: said as loaded, no figure made up
    assert judge_line(MINILM, True, {"judge": True}, VNNI) == idle
    served = endpoint_model("http://127.0.0.1:9/v1", "text-embedding-3-small", 0.5)
    assert judge_line(served, True, read, NO_VNNI).startswith(f"its judge: none for {served.label}")


def test_status_tells_the_users_recall_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_SWITCH, raising=False)  # tests/conftest.py switches the encoder off here
    home = tmp_path / "home"
    home.mkdir()
    assert configured(home) == Configured(None, True)
    on = status(home, cpu=NO_VNNI).splitlines()
    assert on[-2] == "its helper: not running (the first run in a project with history starts it)"
    assert on[-1].startswith("its judge: on (recall_judge): the helper loads it as it starts; this CPU (AMD EPYC")
    (home / "config.yaml").write_text("recall_judge: false\n")
    said = configured(home)
    assert said == Configured(None, False)
    assert status(home, said.endpoint, said.judge, cpu=NO_VNNI).splitlines()[-1] == "its judge: off (recall_judge: false)"
    (home / "config.yaml").write_text("recall_judge: [unclosed\n")  # unreadable: clio says so when it starts
    assert configured(home) == Configured()
