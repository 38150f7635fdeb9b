"""Reading the README and the docs/ pages: their code blocks, run as written."""

import re
import textwrap
from pathlib import Path

from rl_sessions_dagster import TogetherRLComponent

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"
PAGES = {
    "README.md": README,
    **{f"docs/{p.name}": p.read_text() for p in sorted(DOCS.glob("*.md"))},
}
KEY = "sim-test-key-0123456789abcdef"


def blocks(text: str, lang: str = "python") -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def block(text: str, marker: str, lang: str = "python") -> str:
    (found,) = [b for b in blocks(text, lang) if marker in b]
    return found


def attributes(yaml_block: str) -> str:
    """The attributes of a defs.yaml block, dedented for ``resolve_from_yaml``."""
    return textwrap.dedent(yaml_block.split("attributes:\n", 1)[1])


def run(code: str, name: str, namespace: dict | None = None) -> dict:
    namespace = {} if namespace is None else namespace
    exec(compile(code, name, "exec"), namespace)
    return namespace


def schema() -> dict:
    return TogetherRLComponent.model().model_json_schema()
