"""A power log is converted in memory bounded by its size: read line by line into compact columns.

The bound asserted is the design's (docs/collectors.md: converting an nvidia-smi log of 4 signals
peaks at about 5-6.5 times the log's size above the imports, the trace itself being about 3 of
that), with room for allocator noise -- never a figure that depends on the machine's speed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from collect.telemetry.logs.synthetic import nvidia_smi_log

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process

_CHILD = """
import sys
from collect.telemetry.logs.formats import convert_log
def hwm():  # peak resident memory of this process, KiB (Linux /proc; not inherited from the parent)
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
base = hwm()
trace = convert_log(sys.argv[1], "nvidia-smi")
print(base, hwm(), trace.poll_ns.size)
"""


def test_converting_a_log_peaks_at_a_small_multiple_of_its_size(tmp_path: Path) -> None:
    path = tmp_path / "gpu.nvidia-smi.csv"
    path.write_text(nvidia_smi_log(15_000, na_lines=(7, 70_000)))  # 150,000 polls, about 12 MB
    size_kib = path.stat().st_size / 1024
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    base, peak, polls = map(int, proc.stdout.split())
    assert polls == 150_000
    assert peak - base <= 8 * size_kib, f"{(peak - base) / size_kib:.1f}x the log's size"
