"""Pydantic models for nested-object parameters (the signature cannot show their fields, so
the adapter validates them client-side), from one datamodel-code-generator call. A model
that cannot be produced or fails the checks is left out with a warning: never a crash,
never a silent drop.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from dataclasses import dataclass, field
from typing import Any

from orsgen.diagnostics import Diagnostic, warning
from orsgen.generate import model_defaults, model_source
from orsgen.generate.model_schema import ROOT_CLASS, ModelRequest, combined_schema


@dataclass
class ToolModel:

    class_name: str
    params: dict[str, str]


@dataclass
class ModelsResult:
    body: str = ""  # Python source after the header, or "" when there are no models
    models: dict[str, ToolModel] = field(default_factory=dict)  # by method name
    diagnostics: list[Diagnostic] = field(default_factory=list)


def _run_codegen(schema: dict[str, Any]) -> str:
    from datamodel_code_generator import InputFileType, LiteralType, PythonVersion, generate
    from datamodel_code_generator.enums import DataModelType

    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        out = generate(
            schema,
            input_file_type=InputFileType.JsonSchema,
            output_model_type=DataModelType.PydanticV2BaseModel,
            target_python_version=PythonVersion.PY_311,
            formatters=[],  # pinned: orsgen formats the whole file itself with black
            disable_timestamp=True,
            enum_field_as_literal=LiteralType.All,
            use_standard_collections=True,
            use_union_operator=True,
            use_field_description=False,
            use_schema_description=False,
            allow_remote_refs=False,
            strict_nullable=True,  # a default does not make a field nullable
            class_name=ROOT_CLASS,
        )
    if not isinstance(out, str):
        raise ValueError("datamodel-code-generator returned no single module")
    return out


def _attempt(requests: list[ModelRequest]) -> tuple[str, dict[str, str]]:
    schema, classes = combined_schema(requests)
    source = model_defaults.typed(model_source.strip(_run_codegen(schema)))
    defined = set(model_source.check_models_source(source))
    missing = [c for c in classes.values() if c not in defined]
    if missing:
        raise ValueError(f"model class {missing[0]} was not generated")
    model_source.build_check(source)
    return source, classes


def _each_alone(requests: list[ModelRequest], diagnostics: list[Diagnostic]) -> list[ModelRequest]:
    good: list[ModelRequest] = []
    for req in requests:
        try:
            _attempt([req])
            good.append(req)
        except Exception as exc:  # noqa: BLE001 - any failure is this tool's
            reason = " ".join(str(exc).split())[:200] or type(exc).__name__
            diagnostics.append(_unvalidated(req, f"no model could be generated ({reason})"))
    return good


def _unvalidated(req: ModelRequest, why: str) -> Diagnostic:
    return warning(
        req.wire, "", f"nested arguments are described but not validated client-side: {why}"
    )


def build_models(requests: list[ModelRequest]) -> ModelsResult:
    result = ModelsResult()
    if not requests:
        return result
    requests = sorted(requests, key=lambda r: r.method)
    try:
        source, classes = _attempt(requests)
    except Exception:  # noqa: BLE001 - find the culprits one tool at a time
        requests = _each_alone(requests, result.diagnostics)
        if not requests:
            return result
        try:
            source, classes = _attempt(requests)
        except Exception as exc:  # noqa: BLE001 - each alone worked; together they do not
            why = f"models could not be combined ({type(exc).__name__})"
            result.diagnostics += [_unvalidated(req, why) for req in requests]
            return result
    result.body = source
    for req in requests:
        nested = {f.name: req.python_names[f.name] for f in req.params}
        result.models[req.method] = ToolModel(classes[req.method], nested)
    return result
