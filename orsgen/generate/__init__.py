"""The pure core: snapshot (+ options recorded in it) → files + diagnostics.

It reads no network and writes no disk. The CLI decides what to do with the result.
"""

from __future__ import annotations

import pprint
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orsgen import __version__ as ORSGEN_VERSION
from orsgen.changelog import changelog
from orsgen.diagnostics import Diagnostic, error, has_errors
from orsgen.generate import docstrings
from orsgen.generate.render import SelfCheckError, format_python, render, self_check
from orsgen.generate.models import build_models
from orsgen.generate.tools import ToolView, build_tools, tool_specs
from orsgen.runtime import RUNTIME_VERSION
from orsgen.snapshot.model import dump, tools_sha256

PY_FILES = ("__init__.py", "adapter.py", "dataset.py", "models.py", "rewards.py", "version.py")


@dataclass
class GenerateResult:
    files: dict[str, str] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


def _label(environment: Mapping[str, Any]) -> str:
    ident = environment.get("identity", {})
    name = ident.get("deployment") or ident.get("env_name") or "(unnamed)"
    return docstrings.literal_body(docstrings.one_line(repr(str(name))))


def _class_doc(environment: Mapping[str, Any], count: int) -> str:
    """One line of facts, then what the adapter returns for images (``docs/vision.md``)."""
    toolset = environment.get("identity", {}).get("toolset")
    shown = docstrings.literal_body(docstrings.one_line(repr(str(toolset))))
    bound = f", bound to the {shown} toolset" if isinstance(toolset, str) else ""
    head = f"Adapter for {_label(environment)}{bound}: {count} tools."
    images = environment.get("images") or {}
    if images.get("in_prompt"):
        seen = "Its prompts carry images (seen when probing)."
    elif images.get("in_prompt") is False:
        seen = "No image was seen in its probed prompts; tool outputs may still carry some."
    else:
        seen = "Its prompts and tool outputs may carry images."
    body = textwrap.fill(
        f"{seen} With ``multimodal=True``, reset() and the tools return a TRL content list "
        "(text and ``PIL.Image.Image`` parts, in block order) for an output that holds an "
        "image; otherwise each image is a text placeholder.",
        width=88,
        initial_indent="    ",
        subsequent_indent="    ",
    )
    return f"{head}\n\n{body}"


def _wire_names(tools: list[ToolView]) -> str:
    """The ``WIRE_NAMES`` literal, one method per line (as black would lay it out)."""
    lines = []
    for tool in sorted(tools, key=lambda t: t.method):
        params = {p.name: p.wire for p in tool.params}
        entry = pprint.pformat((tool.wire, params), width=10**6, sort_dicts=True)
        lines.append(f"        {tool.method!r}: {entry},\n")
    return "{\n" + "".join(lines) + "    }"


def _terminal_tool(environment: Mapping[str, Any]) -> str:
    """``(wire name, argument)`` of the ``@terminal`` tool, which the model never calls:
    ``outcome_reward`` feeds it the rollout's final assistant message."""
    term = environment.get("terminal_tool")
    if not isinstance(term, Mapping) or not isinstance(term.get("name"), str):
        return "None"
    arg = term.get("arg")
    return repr((term["name"], arg if isinstance(arg, str) else None))


def _imports(tools: list[ToolView]) -> list[str]:
    typing_names = ["Any", "ClassVar"]
    if any("Literal[" in p.hint for t in tools for p in t.params):
        typing_names.append("Literal")
    lines = [f"from typing import {', '.join(typing_names)}", ""]
    if any(p.default == "_UNSET" for t in tools for p in t.params):
        lines.append("from orsgen.runtime.adapter import UNSET as _UNSET")
    lines.append("from orsgen.runtime.adapter import Content as _Content")
    lines.append("from orsgen.runtime.adapter import OrsAdapter as _OrsAdapter")
    lines.append("from orsgen.runtime.adapter import SelfScoring as _SelfScoring")
    if any(t.model_class for t in tools):
        lines.append("from orsgen.runtime.validate import check_arguments as _check_arguments")
        lines += ["", "from . import models as _models"]
    return lines


def _attach_models(tools: list[ToolView], diagnostics: list[Diagnostic]) -> str:
    """Generate ``models.py``'s body and point each tool at its validation model."""
    built = build_models([t.model_request for t in tools if t.model_request is not None])
    diagnostics.extend(built.diagnostics)
    for tool in tools:
        model = built.models.get(tool.method)
        if model is not None:
            tool.model_class = model.class_name
            tool.model_names = repr(model.params)
    return built.body


def generate(snapshot: Mapping[str, Any]) -> GenerateResult:
    """Generate every file of the adapter package described by ``snapshot``."""
    result = GenerateResult()
    environment = snapshot["environment"]
    package = snapshot["package"]
    specs = tool_specs(environment, package)
    tools = build_tools(specs, result.diagnostics, package.get("rename"))
    if not tools and not has_errors(result.diagnostics):
        result.diagnostics.append(error(None, "", "the environment exposes no tools to generate"))
    if has_errors(result.diagnostics):
        return result
    models_body = _attach_models(tools, result.diagnostics)
    ident = environment.get("identity", {})
    target = environment.get("target", {})
    class_name = package["class_name"]
    context: dict[str, Any] = {
        "package": package["name"],
        "import_path": package["name"],
        "class_name": class_name,
        "scored_class_name": f"Scored{class_name}",
        "class_doc": _class_doc(environment, len(tools)),
        "env_label": _label(environment),
        "env_name": repr(ident.get("env_name")),
        "deployment": repr(ident.get("deployment")),
        "default_url": repr(target.get("value") if target.get("kind") == "url" else None),
        "default_split": repr(package.get("split", "train")),
        "tools_sha256": repr(tools_sha256(environment)),
        "terminal_tool": _terminal_tool(environment),
        "supports_score_group": repr(bool(environment.get("supports_score_group"))),
        "toolset": repr(ident.get("toolset")),
        "wire_names": _wire_names(tools),
        "imports": _imports(tools),
        "tools": tools,
        "models_body": models_body,
        "version": repr(package.get("version", "1.0.0")),
        "snapshot_sha256": repr(snapshot["sha256"]),
        "orsgen_version": repr(ORSGEN_VERSION),
        "runtime_version": repr(RUNTIME_VERSION),
        "runtime_requirement": "requires_" + RUNTIME_VERSION.replace(".", "_"),
    }
    for name in PY_FILES:
        source = render(f"{name}.jinja", **context)
        try:
            self_check(name, source)
            formatted = format_python(source)
            self_check(name, formatted)
        except SelfCheckError as exc:
            result.diagnostics.append(error(None, "", str(exc)))
            return result
        except Exception as exc:  # noqa: BLE001 - black's errors are not one type
            result.diagnostics.append(error(None, "", f"{name}: formatting failed: {exc}"))
            return result
        result.files[name] = formatted
    result.files["snapshot.json"] = dump(dict(snapshot))
    result.files["CHANGES.md"] = changelog(package.get("history") or [])
    result.files["py.typed"] = ""
    return result
