"""The probe plan, ``concurrency`` sessions at once; every session is closed. Per task:

1. **look**: the prompt and the session's tools (shared plus task tools);
2. **degenerate**: per tool, its degenerate arguments in order in a fresh session, the rest
   in another after a ``finished`` or a server failure;
3. **deep** (the first :data:`DEEP_TASKS` of each split, before the degenerate actions, one
   task at a time with no other session open): the calls ``X`` (each tool once, its last
   degenerate arguments) in four fresh sessions one after another (``F0`` warms up;
   ``F1``..``F3`` are compared: the determinism probe), then two sessions open at once:
   ``B`` makes the calls ``Y`` (each tool's minimal arguments), then ``C`` makes ``X`` with
   ``B`` making ``Y`` again call by call in between. On a task whose fresh runs all agree,
   ``C`` differing from them is state leaking between sessions."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from orsgen.jsonobject import as_object
from orsgen.runtime.errors import describe
from orsgen.runtime.transport import sdk
from orsgen.validation.instances import degenerate
from orsgen.validation.probe import Call, Prober, failure_kind

DEEP_TASKS = 2  # tasks per split that get the determinism and session-leak probes
# Session opens failing in a row before the probe stops opening more (the server is
# reported, and the run still ends with a report).
MAX_OPEN_FAILURES = 5

Planned = Sequence[tuple[str, Mapping[str, Any]]]


@dataclass(frozen=True)
class Look:
    """What a task shows: its prompt, whether it holds an image, its tools."""

    split: str
    index: int
    prompt: str
    image: bool
    tools: list[dict[str, Any]]


@dataclass(frozen=True)
class Session:
    """One probe session's calls. ``purpose``: ``degenerate``, ``fresh`` (``F0``..``F3``:
    ``run``), ``other`` (``B``) or ``beside`` (``C``)."""

    split: str
    index: int
    purpose: str
    calls: list[Call]
    run: int = 0


@dataclass(frozen=True)
class OpenFailure:
    split: str
    index: int
    error: str
    failure: str | None  # a server failure's kind, None for a refusal (a 4xx)


class NotOpened(Exception):
    """A session could not be opened (recorded), or the probe gave up opening more."""


@dataclass
class Observations:
    """Everything the probes saw, appended as each session ends (from the loop thread), so
    an interrupted run still has what it found so far."""

    splits: dict[str, int] = field(default_factory=dict[str, int])  # split -> tasks probed
    looks: dict[tuple[str, int], Look] = field(default_factory=dict[tuple[str, int], Look])
    sessions: list[Session] = field(default_factory=list[Session])
    open_failures: list[OpenFailure] = field(default_factory=list[OpenFailure])
    specs: dict[str, list[Any] | None] = field(default_factory=dict[str, list[Any] | None])
    deep: set[tuple[str, int]] = field(default_factory=set[tuple[str, int]])
    done: set[tuple[str, int]] = field(default_factory=set[tuple[str, int]])
    gave_up: str | None = None
    failures_in_a_row: int = 0

    def of(self, purpose: str, split: str, index: int) -> list[Session]:
        return [
            s for s in self.sessions if (s.purpose, s.split, s.index) == (purpose, split, index)
        ]

    def fresh(self, split: str, index: int) -> list[Session]:
        """The compared fresh runs ``F1``..``F3`` (``F0`` only warms up)."""
        return sorted((s for s in self.of("fresh", split, index) if s.run > 0), key=lambda s: s.run)


@dataclass
class Plan:
    """Runs the probes of every task of ``obs.splits`` with ``prober``."""

    prober: Prober
    obs: Observations
    seed: int
    concurrency: int
    progress: Callable[[str], None]
    limit: asyncio.Semaphore = field(init=False)

    def __post_init__(self) -> None:
        self.limit = asyncio.Semaphore(self.concurrency)

    async def open(self, split: str, index: int) -> Any:
        """An open session on the task (the caller closes it); a failure is recorded and
        raised as :class:`NotOpened`, and after :data:`MAX_OPEN_FAILURES` in a row no more
        sessions are opened."""
        if self.obs.gave_up is not None:
            raise NotOpened(self.obs.gave_up)
        try:
            opened = await self.prober.open(split, index)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a failed open is an observation
            self._failed(split, index, exc)
            self.obs.failures_in_a_row += 1
            if self.obs.failures_in_a_row >= MAX_OPEN_FAILURES and self.obs.gave_up is None:
                self.obs.gave_up = (
                    f"the server failed {MAX_OPEN_FAILURES} session opens in a row (last: "
                    f"{describe(exc)}); no more sessions were opened"
                )
                self.progress(self.obs.gave_up)
            raise NotOpened(describe(exc)) from None
        self.obs.failures_in_a_row = 0
        return opened

    def _failed(self, split: str, index: int, exc: Exception) -> None:
        failure = OpenFailure(split, index, describe(exc), failure_kind(exc))
        self.obs.open_failures.append(failure)

    @contextlib.asynccontextmanager
    async def session(self, split: str, index: int) -> AsyncGenerator[Any]:
        opened = await self.open(split, index)
        try:
            yield opened
        finally:
            await sdk.close_async(opened)

    async def run(self) -> None:
        """Every task's look (concurrently), then the deep probes one task at a time with no
        other session open (state shared between sessions must not show as noise in the
        fresh runs), then the degenerate actions (concurrently)."""
        await self._read_specs()
        tasks = [(s, i) for s, count in self.obs.splits.items() for i in range(count)]
        await asyncio.gather(*(self._look(split, index) for split, index in tasks))
        self.progress(f"read the prompts and tools of {len(self.obs.looks)} tasks")
        deep = [k for k in tasks if k[1] < DEEP_TASKS and k in self.obs.looks]
        for split, index in deep:
            if self.obs.looks[(split, index)].tools:
                with contextlib.suppress(NotOpened):
                    await self._deep(split, index)
        if deep:
            self.progress(f"ran the determinism and session-leak probes on {len(deep)} tasks")
        await asyncio.gather(*(self._task(s, i) for s, i in tasks if (s, i) in self.obs.looks))

    def _arguments(self, split: str, index: int) -> dict[str, list[dict[str, Any]]]:
        tools = self.obs.looks[(split, index)].tools
        return {t["name"]: degenerate(t["name"], t.get("input_schema"), self.seed) for t in tools}

    async def _read_specs(self) -> None:
        """Each split's task specs, where the server lists them (``/task_range``)."""
        env = await self.prober.environment()
        endpoint = self.prober.endpoint
        path = endpoint.env_path("/task_range")
        for split, count in self.obs.splits.items():
            payload = {"split": split, "start": 0, "stop": count}
            try:
                request = sdk.stateless(endpoint, env, "POST", path, payload)
                answer = await asyncio.wait_for(request, self.prober.timeout)
                self.obs.specs[split] = list(as_object(answer).get("tasks") or [])
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - task specs only sharpen split_overlap
                self.obs.specs[split] = None

    async def _look(self, split: str, index: int) -> None:
        try:
            async with self.limit:
                async with self.session(split, index) as opened:
                    try:
                        prompt, image, tools = await self.prober.look(opened)
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:  # noqa: BLE001 - the prompt is an observation
                        self._failed(split, index, exc)
                        return
        except NotOpened:
            return
        self.obs.looks[(split, index)] = Look(split, index, prompt, image, tools)

    async def _task(self, split: str, index: int) -> None:
        arguments = self._arguments(split, index)
        await asyncio.gather(*(self._degenerate(split, index, t, a) for t, a in arguments.items()))
        self.obs.done.add((split, index))
        count, total = len(self.obs.done), len(self.obs.looks)
        self.progress(f"probed task {index} of {split} ({count}/{total})")

    async def _degenerate(
        self, split: str, index: int, tool: str, arguments: list[dict[str, Any]]
    ) -> None:
        """The degenerate arguments of ``tool`` in order; a ``finished`` or a server
        failure ends a session, and the rest go in a fresh one."""
        remaining: Planned = [(tool, a) for a in arguments]
        with contextlib.suppress(NotOpened):
            while remaining:
                async with self.limit:
                    async with self.session(split, index) as opened:
                        made = await self.prober.calls(opened, remaining)
                self.obs.sessions.append(Session(split, index, "degenerate", made))
                remaining = remaining[max(len(made), 1) :]

    async def _deep(self, split: str, index: int) -> None:
        """The determinism and session-leak probes of one task (see the module's doc)."""
        degenerate = self._arguments(split, index).items()
        x: Planned = [(t, found[-1]) for t, found in degenerate]
        y: Planned = [(t, found[0]) for t, found in degenerate]
        self.obs.deep.add((split, index))
        for run in range(4):  # F0 (warm-up), F1, F2, F3
            fresh = _Rolling(self, split, index)
            try:
                for call in x:
                    await fresh.call(*call)
            finally:
                await fresh.close()
            self.obs.sessions.append(Session(split, index, "fresh", fresh.calls, run=run))
        other, beside = _Rolling(self, split, index), _Rolling(self, split, index)
        try:
            await other.start()
            await beside.start()
            # B's calls first, then C's and B's in turn, call by call (as concurrent
            # rollouts interleave): whichever order a tool writes and reads state in, one
            # of C's calls comes after one of B's.
            for call in y:
                await other.call(*call)
            for at in range(max(len(x), len(y))):
                if at < len(x):
                    await beside.call(*x[at])
                if at < len(y):
                    await other.call(*y[at])
        finally:
            await beside.close()
            await other.close()
            self.obs.sessions.append(Session(split, index, "other", other.calls))
            self.obs.sessions.append(Session(split, index, "beside", beside.calls))


class _Rolling:
    """A probe's calls on one task in a session that a ``finished`` (or a server failure)
    replaces with a fresh one, so that a tool after a finishing one is still called."""

    def __init__(self, plan: Plan, split: str, index: int) -> None:
        self.plan, self.split, self.index = plan, split, index
        self.session: Any = None
        self.calls: list[Call] = []

    async def start(self) -> None:
        if self.session is None:
            self.session = await self.plan.open(self.split, self.index)

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> None:
        if self.calls and self.calls[-1].ends:
            await self.close()
        await self.start()
        self.calls.append(await self.plan.prober.call(self.session, tool, arguments))

    async def close(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            await sdk.close_async(session)
