"""Unit tests of orsgen.generate.naming: every Python name orsgen emits."""

from __future__ import annotations

import keyword
import random

import pytest

from orsgen.generate import naming
from orsgen.runtime.adapter import OrsAdapter

HOSTILE = [
    "class",
    "import",
    "from",
    "self",
    "cls",
    "match",
    "case",
    "_",
    "reset",
    "get_reward",
    "_private",
    "__class__",
    "__init__",
    "reward",
    "rewards",
    "metadata",
    "finished",
    "last_output",
    "close",
    "WIRE_NAMES",
    "str",
    "Any",
    "read-file",
    "fs.read",
    "read file",
    "read_file",
    "lire_é",
    "日本語",
    "3d",
    "",
    "x" * 300,
    "x" * 299 + "y",
    "tool",
    "tool_2",
    "a\nb",
    "a\u2028b",
    "a\x00b",
    "{{ x }}",
    "__import__('os')",
    "type",
    "None",
    "True",
]


def _valid(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name) and name.isascii()


@pytest.mark.parametrize("assign", [naming.method_names, naming.param_names])
def test_every_name_is_a_valid_unique_public_identifier(assign) -> None:
    names = assign(HOSTILE)
    assert set(names) == set(HOSTILE)  # nothing dropped
    assert len(set(names.values())) == len(HOSTILE)  # nothing merged
    for wire, name in names.items():
        assert _valid(name), (wire, name)
        assert not name.startswith("_"), (wire, name)  # TRL hides _-names from the model
        assert len(name) <= naming.MAX_NAME_LENGTH + 4


def test_reserved_method_names_are_renamed() -> None:
    names = naming.method_names(HOSTILE)
    for wire in (
        "class",
        "import",
        "self",
        "match",
        "reset",
        "get_reward",
        "reward",
        "rewards",
        "metadata",
        "finished",
        "last_output",
        "close",
        "WIRE_NAMES",
        "str",
        "Any",
    ):
        assert names[wire] == f"{wire}_", wire
    assert names["__class__"] != "__class__" and names["__init__"] != "__init__"
    assert names["read_file"] == "read_file"  # a clean identifier keeps its name
    assert names["type"] == "type"


def test_every_public_base_attribute_is_reserved() -> None:
    public = {n for n in dir(OrsAdapter) if not n.startswith("_")}
    public |= set(getattr(OrsAdapter, "__annotations__", {}))
    missing = {n for n in public if not n.startswith("_")} - naming.RESERVED_METHODS
    assert not missing, f"add these adapter attributes to naming.ADAPTER_ATTRIBUTES: {missing}"


def test_parameter_names_never_shadow_what_a_method_body_uses() -> None:
    names = naming.param_names(["self", "str", "Any", "dict", "from", "lambda"])
    assert names == {
        "self": "self_",
        "str": "str_",
        "Any": "Any_",
        "dict": "dict_",
        "from": "from_",
        "lambda": "lambda_",
    }


def test_non_identifiers_are_sanitized_readably() -> None:
    names = naming.method_names(
        ["read-file", "fs.read", "lire_fichier_é", "3d_render", "日本語", ""]
    )
    assert names["read-file"] == "read_file"
    assert names["fs.read"] == "fs_read"
    assert names["lire_fichier_é"] == "lire_fichier_e"  # transliterated
    assert names["3d_render"] == "tool_3d_render"
    assert {names["日本語"], names[""]} == {"tool", "tool_2"}


def test_long_names_are_cut_with_a_stable_digest() -> None:
    a, b = "x" * 300, "x" * 299 + "y"
    names = naming.method_names([a, b])
    assert names[a] != names[b]
    assert all(len(n) <= naming.MAX_NAME_LENGTH for n in names.values())
    assert naming.method_names([b, a]) == names


def test_collisions_are_independent_of_input_order() -> None:
    first = naming.method_names(HOSTILE)
    rng = random.Random(7)
    for _ in range(20):
        shuffled = HOSTILE[:]
        rng.shuffle(shuffled)
        assert naming.method_names(shuffled) == first


def test_exact_identifiers_win_their_names() -> None:
    names = naming.method_names(["read file", "read-file", "read_file", "read_file_2"])
    assert names["read_file"] == "read_file"
    assert names["read_file_2"] == "read_file_2"
    assert {names["read file"], names["read-file"]} == {"read_file_3", "read_file_4"}
    # A keyword that only needs a suffix outranks a dunder that needed sanitizing.
    names = naming.method_names(["__class__", "class"])
    assert names == {"class": "class_", "__class__": "class__2"}


def test_class_and_package_names() -> None:
    assert naming.class_name("echoenv") == "EchoenvEnv"
    assert naming.class_name("Eigent/SETA") == "SetaEnv"
    assert naming.class_name("EchoEnv") == "EchoEnv"
    assert naming.class_name("3d-env") == "Env3dEnv"
    assert naming.package_name("my-env") == "my_env"
    assert naming.package_name("class") == "env_class"
    assert naming.package_name("9lives") == "env_9lives"
