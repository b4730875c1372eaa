"""A :class:`~orsgen.serve.recording.Recording` as an SDK ``Environment`` class: its tool
list is the snapshot's, schema for schema (the drift guard finds no drift), and each session
answers from the recording."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from orsgen.jsonobject import as_array, as_object
from orsgen.runtime.errors import MODEL_REASONS, ToolEnvironmentError, ToolInputError
from orsgen.serve.recording import Follower, Recording

# The SDK's reasons for a refused call, by the reason orsgen records for it.
_SDK_REASONS: dict[str, Any] = {
    "invalid_arguments": "input_validation",
    "unknown_tool": "not_found",
    "episode_finished": "episode_finished",
}


def _schema(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """A tool's input schema as the server sent it: its properties in their order."""
    schema = spec.get("input_schema")
    if schema is None:
        return None
    out = dict(as_object(schema))
    properties = as_object(out.get("properties"))
    if properties:
        order = [str(n) for n in as_array(spec.get("property_order")) if n in properties]
        out["properties"] = {n: properties[n] for n in [*order, *properties]}
    return out


def _arguments_model(schema: dict[str, Any]) -> type[BaseModel]:
    """Any arguments, shown as the recorded schema (``Environment.list_tools`` reads it)."""

    class Arguments(BaseModel):
        model_config = ConfigDict(extra="allow")

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return schema

    return Arguments


def _tool(spec: Mapping[str, Any], model: type[BaseModel] | None) -> Callable[..., Any]:
    """A method the SDK lists as a tool (one pydantic argument, or none); never run, as
    ``_call_tool`` answers every call."""
    from openreward.environments import ToolOutput, tool  # type: ignore[import-untyped]

    def method(self: Any, params: Any = None) -> Any:
        raise NotImplementedError("orsgen serve answers every call from the recording")

    def bare(self: Any) -> Any:
        raise NotImplementedError("orsgen serve answers every call from the recording")

    made = bare if model is None else method
    made.__name__, made.__doc__ = str(spec["name"]), str(spec.get("description") or "")
    made.__annotations__ = {"return": ToolOutput, **({"params": model} if model else {})}
    return tool(made)  # type: ignore[no-any-return]


def _failure(tool: str, reason: Any, text: str) -> tuple[Any, str]:
    """A recorded failed call (its orsgen ``reason`` and text) as the SDK's reason for a
    refused call, ``None`` for an environment's failure, and its detail."""
    kind = ToolInputError if reason in MODEL_REASONS else ToolEnvironmentError
    prefix = str(kind(tool, reason, ""))
    return _SDK_REASONS.get(reason), text.removeprefix(prefix)


def environment_class(recording: Recording) -> type[Any]:
    """The SDK ``Environment`` subclass that serves ``recording``."""
    from openreward import environments as sdk  # type: ignore[import-untyped]

    env = recording.environment
    identity = as_object(env.get("identity"))
    name = str(identity.get("env_name") or "recorded")
    splits = recording.splits()

    def list_splits(cls: type) -> list[Any]:
        return [sdk.Split(name=split, type=kind) for split, (kind, _) in splits.items()]

    def list_tasks(cls: type, split: str) -> list[dict[str, Any]]:
        return [{"split": split, "task_index": i} for i in range(splits[split][1])]

    def __init__(self: Any, task_spec: Any = None, secrets: Any = None) -> None:
        sdk.Environment.__init__(self, task_spec or {}, secrets or {})
        spec = as_object(task_spec)
        self.task = str(spec.get("split")), int(spec.get("task_index", -1))
        self.follower = Follower(recording, *self.task)

    def get_prompt(self: Any) -> list[Any]:
        return [sdk.TextBlock(text=recording.prompt(*self.task))]

    def list_task_tools(self: Any) -> Any:
        specs = [
            sdk.ToolSpec(name=t["name"], description=t["description"], input_schema=_schema(t))
            for t in recording.task_tools(*self.task)
        ]
        return sdk.ListToolsOutput(tools=specs)

    async def _call_tool(self: Any, tool: str, arguments: Mapping[str, Any]) -> Any:
        # A tool may answer only a ToolOutput, and one that raises ends the session: the
        # SDK's dispatch is the one place to answer a call off the recording with a tool
        # error the episode goes on after.
        found = self.follower.next(tool, dict(arguments))
        if isinstance(found, str):
            # No SDK reason fits: the client knows it by its text (OFF_RECORDING_TEXT).
            return sdk.RunToolOutput(sdk.RunToolError(error=found, reason=None))
        text = found.text
        if found.error:  # the environment refused the call, or failed there
            reason, detail = _failure(tool, found.error, text)
            if reason is None:
                raise RuntimeError(detail)  # the session ends, as it did
            return sdk.RunToolOutput(sdk.RunToolError(error=detail, reason=reason))
        blocks = [sdk.TextBlock(text=text)] if text else []
        output = sdk.ToolOutput(blocks=blocks, reward=found.reward, finished=found.finished)
        return sdk.RunToolOutput(sdk.RunToolSuccess(output=output))

    namespace: dict[str, Any] = {
        "__init__": __init__,
        "__module__": __name__,
        "name": classmethod(lambda cls: name),
        "list_splits": classmethod(list_splits),
        "list_tasks": classmethod(list_tasks),
        "get_prompt": get_prompt,
        "list_task_tools": list_task_tools,
        "_call_tool": _call_tool,
    }
    for spec in as_array(env.get("tools")):
        schema = _schema(spec)
        namespace[spec["name"]] = _tool(spec, None if schema is None else _arguments_model(schema))
    term = env.get("terminal_tool")
    if term:
        arg = as_object(term).get("arg")
        fields: dict[str, Any] = {str(arg): (str, ...)}  # the final message
        model = create_model("FinalMessage", **fields) if arg else None
        namespace[term["name"]] = sdk.terminal(_tool(term, model))
    return type(str(identity.get("class_name") or "Recorded"), (sdk.Environment,), namespace)
