"""Images as TRL content lists (``multimodal=True``) or text
placeholders, and ``env_overrides`` sent at session creation and never written anywhere.
Against a real ORS server (tests/envs/vision_env.py) whose prompt and tool outputs carry
images."""

from __future__ import annotations

import base64
import functools
import hashlib
import logging
import pickle
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ors_server
from conftest import ENVS, served_package
from conftest import failed as failed_call

VISION_ENV = ENVS / "vision_env.py"
PIL = pytest.importorskip("PIL.Image")


@pytest.fixture(scope="module")
def vision(
    ors_servers: ors_server.Servers, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Any, ors_server.RunningServer, Path]]:
    out = tmp_path_factory.mktemp("vision") / "vision_pkg"
    module, server = served_package(ors_servers, VISION_ENV, out)
    try:
        yield module, server, out
    finally:
        module.VisionEnv.close_all()


def _payloads() -> list[str]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("vision_env_payloads", VISION_ENV)
    assert spec is not None and spec.loader is not None
    vision_env = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vision_env)
    return [vision_env.PROMPT_IMAGE, *(data for _, data in vision_env.IMAGES.values())]


def test_text_mode_shows_mime_and_pixel_size_never_the_payload(vision) -> None:
    module, server, _ = vision
    env = module.VisionEnv(base_url=server.url)
    try:
        prompt = env.reset(task_index=0)
        assert (
            prompt
            == "What colour is this image?\n[image: image/png, 64x48]\nAnswer with the answer tool."
        )
        assert env.show(kind="png") == "before\n[image: image/png, 32x32]\nafter"
        assert "corrupt base64" in str(env.show(kind="corrupt"))
        assert "[image: image/svg+xml," in str(env.show(kind="svg"))
        assert "20000x20000" in str(env.show(kind="huge"))
        for text in (prompt, env.last_output):
            assert not any(p[:40] in str(text) for p in _payloads())
    finally:
        env.close()


def test_multimodal_returns_trl_content_lists_in_block_order(vision) -> None:
    module, server, _ = vision
    env = module.VisionEnv(base_url=server.url, multimodal=True)
    try:
        prompt = env.reset(task_index=0)
        assert [p["type"] for p in prompt] == ["text", "image", "text"]
        assert prompt[0]["text"] == "What colour is this image?"
        assert isinstance(prompt[1]["image"], PIL.Image) and prompt[1]["image"].size == (64, 48)
        assert prompt[1]["image"].getpixel((0, 0)) == (200, 30, 30)
        shown = env.show(kind="png")
        assert [p["type"] for p in shown] == ["text", "image", "text"]
        assert shown[1]["image"].size == (32, 32)
        assert env.last_output == "before\n[image: image/png, 32x32]\nafter"
        # Text-only outputs stay str.
        assert env.answer(text="red") == "right"
        assert env.reward == 1.0
    finally:
        env.close()


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        ("corrupt", "corrupt base64 data"),
        ("svg", "unsupported type"),
        ("huge", "20000x20000 is more than"),
    ],
)
def test_an_image_that_cannot_be_shown_becomes_a_clear_text_part(
    vision, kind: str, why: str
) -> None:
    module, server, _ = vision
    env = module.VisionEnv(base_url=server.url, multimodal=True)
    try:
        env.reset(task_index=0)
        out = env.show(kind=kind)  # never raises
        assert isinstance(out, str), out  # no image survived: plain text
        lines = out.split("\n")
        assert lines[0] == "before" and lines[-1] == "after"
        assert lines[1].startswith("[image not shown: image/") and why in lines[1]
        assert not any(p[:40] in out for p in _payloads())
    finally:
        env.close()


def test_multimodal_factory_is_a_picklable_partial(vision) -> None:
    module, server, _ = vision
    factory = pickle.loads(
        pickle.dumps(functools.partial(module.VisionEnv, base_url=server.url, multimodal=True))
    )
    env = factory()
    try:
        assert isinstance(env.reset(task_index=1)[1]["image"], PIL.Image)
    finally:
        env.close()


def test_return_annotation_is_accepted_by_get_json_schema(vision) -> None:
    from transformers.utils import get_json_schema

    module, _, _ = vision
    schema = get_json_schema(module.VisionEnv.show)["function"]
    assert schema["parameters"]["properties"]["kind"]["enum"] == ["png", "corrupt", "svg", "huge"]


def test_snapshot_records_prompt_images_and_docstring_says_so(vision) -> None:
    module, _, out = vision
    import json

    snapshot = json.loads((out / "snapshot.json").read_text())
    assert snapshot["environment"]["images"] == {"in_prompt": True}
    assert "Its prompts carry images" in (module.VisionEnv.__doc__ or "")
    assert "multimodal=True" in (module.VisionEnv.__doc__ or "")


def test_env_overrides_reach_session_creation_and_are_never_written(
    vision, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    module, server, out = vision
    marker = "sk-override-" + hashlib.sha256(b"vision-test").hexdigest()[:24]
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = module.VisionEnv(base_url=server.url, env_overrides={"OPENAI_API_KEY": marker})
        try:
            env.reset(task_index=0)
            env.answer(text="blue")
            failed = failed_call(env.answer, text="again")  # the episode finished: raised
        finally:
            env.close()
    seen = server.env_overrides()
    assert seen.get("OPENAI_API_KEY") == hashlib.sha256(marker.encode()).hexdigest()
    written = [p.read_text(errors="replace") for p in out.rglob("*") if p.is_file()]
    captured = capfd.readouterr()
    places = [
        *written,
        server.log.read_text(errors="replace"),
        caplog.text,
        captured.out,
        captured.err,
        str(failed),
        repr(failed),
        repr(env),
        repr(env.__dict__),
        *(str(w.message) for w in caught),
    ]
    assert [i for i, text in enumerate(places) if marker in text] == []


def test_env_overrides_must_be_strings(vision) -> None:
    module, server, _ = vision
    with pytest.raises(TypeError, match="OPENAI_BASE_URL"):
        module.VisionEnv(base_url=server.url, env_overrides={"OPENAI_BASE_URL": 3})
