"""The pure core: snapshot (+ options recorded in it) → files + diagnostics; no network, no disk."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from orsgen._version import __version__ as ORSGEN_VERSION
from orsgen.diagnostics import Diagnostic, error, has_errors
from orsgen.generate import docstrings, emit, ir, layout
from orsgen.generate.render import SelfCheckError, format_python, render, self_check
from orsgen.generate.models import build_models
from orsgen.generate.tools import ToolView, build_tools, tool_specs
from orsgen.runtime import RUNTIME_VERSION
from orsgen.snapshot.model import dump, tools_sha256
from orsgen.snapshot.stored import Environment, HistoryEntry, Snapshot, stored_form
from orsgen.wording import plural

PY_FILES = ("__init__.py", "adapter.py", "dataset.py", "models.py", "rewards.py", "version.py")


@dataclass
class GenerateResult:
    files: dict[str, str] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


def _label(environment: Environment) -> str:
    return docstrings.literal_body(docstrings.one_line(repr(environment.identity.label)))


def _class_doc(environment: Environment, count: int) -> str:
    """One line of facts, then what the adapter returns for images (``docs/training.md``)."""
    toolset = environment.identity.toolset
    shown = docstrings.literal_body(docstrings.one_line(repr(toolset)))
    bound = f", bound to the {shown} toolset" if toolset is not None else ""
    head = f"Adapter for {_label(environment)}{bound}: {plural(count, 'tool')}."
    seen = {
        True: "Its prompts carry images (seen when probing).",
        False: "No image was seen in its probed prompts; tool outputs may still carry some.",
        None: "Its prompts and tool outputs may carry images.",
    }[environment.images.in_prompt]
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
    # Parameters only when renamed; the trailing comma puts each method on its own line.
    entries = [
        f"{tool.method!r}: "
        + repr((tool.wire, dict(sorted((p.name, p.wire) for p in tool.params if p.name != p.wire))))
        for tool in sorted(tools, key=lambda t: t.method)
    ]
    return "{" + ", ".join(entries) + ",}"


def _imports(tools: list[ToolView]) -> list[str]:
    typing_names = ["Any", "ClassVar"]
    if any(isinstance(n, ir.LiteralOf) for t in tools for p in t.params for n in ir.walk(p.type)):
        typing_names.append("Literal")
    lines = [
        "from collections.abc import Mapping as _Mapping",
        f"from typing import {', '.join(typing_names)}",
        "",
    ]
    if any(not p.required and p.default is emit.UNSET for t in tools for p in t.params):
        lines.append("from orsgen.runtime.adapter import UNSET as _UNSET")
    for name in ("Content", "OrsAdapter", "SelfScoring"):
        lines.append(f"from orsgen.runtime.adapter import {name} as _{name}")
    if any(t.model_class for t in tools):
        lines.append("from orsgen.runtime.validate import check_arguments as _check_arguments")
        lines += ["", "from . import models as _models"]
    return lines


def _attach_models(tools: list[ToolView], diagnostics: list[Diagnostic]) -> str:
    built = build_models([t.model_request for t in tools if t.model_request is not None])
    diagnostics.extend(built.diagnostics)
    for tool in tools:
        model = built.models.get(tool.method)
        if model is not None:
            tool.model_class = model.class_name
            tool.model_names = repr(model.params)
    return built.body


def generate(stored: Snapshot) -> GenerateResult:
    """Every file of the adapter package of the typed snapshot. Its schemas have sorted keys, as
    ``snapshot.json``'s, so a live snapshot generates what ``orsgen check`` regenerates."""
    result = GenerateResult()
    environment, package = stored.environment, stored.package
    tools = build_tools(tool_specs(environment, package), result.diagnostics, package.rename)
    if not tools and not has_errors(result.diagnostics):
        result.diagnostics.append(error(None, "", "the environment exposes no tools to generate"))
    if has_errors(result.diagnostics):
        return result
    models_body = _attach_models(tools, result.diagnostics)
    context = _template_context(stored, tools, models_body)
    for name in PY_FILES:
        if name == "models.py" and not models_body:
            continue  # nothing to validate client-side: no models module at all
        formatted = _render_python(name, context, result.diagnostics)
        if formatted is None:
            return result
        result.files[name] = formatted
    result.files["snapshot.json"] = dump(stored)
    result.files["CHANGES.md"] = _changelog(package.history)
    result.files["py.typed"] = ""
    return result


def _template_context(stored: Snapshot, tools: list[ToolView], models_body: str) -> dict[str, Any]:
    environment, package = stored.environment, stored.package
    ident, target, term = environment.identity, environment.target, environment.terminal_tool
    class_name = package.class_name
    return {
        "package": package.name,
        "class_name": class_name,
        "scored_class_name": f"Scored{class_name}",
        "class_doc": _class_doc(environment, len(tools)),
        "env_label": _label(environment),
        "env_name": repr(ident.env_name),
        "deployment": repr(ident.deployment),
        "default_url": repr(environment.default_url),
        # The usage example needs no base_url where the package records a server or catalog name.
        "server_known": target is None or target.kind != "file" or ident.deployment is not None,
        "default_split": repr(package.split),
        "tools_sha256": repr(tools_sha256(stored_form(environment))),
        # ``(wire name, argument)`` of the ``@terminal`` tool, which the model never calls:
        # ``outcome_reward`` feeds it the rollout's final assistant message.
        "terminal_tool": repr(None if term is None else (term.name, term.arg)),
        "supports_score_group": repr(environment.supports_score_group),
        "toolset": repr(ident.toolset),
        "wire_names": _wire_names(tools),
        "imports": _imports(tools),
        "tools": tools,
        "models_body": models_body,
        "version": repr(package.version),
        "snapshot_sha256": repr(stored.sha256),
        "orsgen_version": repr(ORSGEN_VERSION),
        "runtime_version": repr(RUNTIME_VERSION),
        "runtime_requirement": "requires_" + RUNTIME_VERSION.replace(".", "_"),
    }


def _render_python(
    name: str, context: Mapping[str, Any], diagnostics: list[Diagnostic]
) -> str | None:
    """The module ``name`` rendered, checked and formatted; ``None`` (an error) if that fails."""
    source = render(f"{name}.jinja", **context)
    try:
        # Checked before black: black's error on source that does not parse names no line,
        # and checking after it would hold two big trees at once (peak memory).
        self_check(name, source)
        if name == "adapter.py":  # hundreds of methods alike: each shape through black once
            return layout.format_module(source, format_python)
        return format_python(source)
    except SelfCheckError as exc:
        diagnostics.append(error(None, "", str(exc)))
    except Exception as exc:  # noqa: BLE001 - black's errors are not one type
        diagnostics.append(error(None, "", f"{name}: formatting failed: {exc}"))
    return None


_LEVELS = dict(major="breaking", minor="additive", patch="cosmetic", initial="first snapshot")


def _changelog(entries: Iterable[HistoryEntry]) -> str:
    """``CHANGES.md``, newest first, with no dates: a pure function of the snapshot."""
    lines = [
        "<!-- @generated by orsgen from snapshot.json. Do not edit by hand. -->",
        "# Changes",
        "",
        "Newest first. Versions follow the rules in orsgen's README (major: breaking).",
        "",
    ]
    for entry in entries:
        lines += [f"## {entry.version} ({_LEVELS.get(entry.level, entry.level)})", ""]
        lines += [f"- {item}" for item in entry.changes] + [""]
    return "\n".join(lines)
