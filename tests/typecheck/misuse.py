"""Misuses of a generated adapter that mypy must reject (see tests/test_generate_negative_types.py).

Every line marked ``# E: <code>`` must produce exactly that mypy error.
"""

from generated.echo import EchoEnv

env = EchoEnv(base_url="http://127.0.0.1:9")
env.echo(text=42)  # E: arg-type
env.echo(text="apple", style="shout")  # E: arg-type
env.echo(txt="apple")  # E: call-arg
env.hint(level="high")  # E: arg-type
env.no_such_tool()  # E: attr-defined
count: int = env.echo(text="apple")  # E: assignment
shown = env.echo(text="apple")
for part in [] if isinstance(shown, str) else shown:
    if part["type"] == "image":
        part["image"].save("out.png")  # E: attr-defined
