"""Build a tiny, local, tool-calling causal LM for CPU demos and tests (no model hub).

- A byte-level BPE tokenizer (``tokenizers``, regex pre-splitting off, vocab <= 1024)
  trained on a few conversations rendered through the chat template. Its chat
  template is byte-identical to ``trl.chat_template_utils.qwen3_chat_template``,
  because TRL recognises templates by equality to set up tool-call parsing.
- A randomly initialised ``Qwen3ForCausalLM`` of about 115k parameters.
- A plain-PyTorch warm-up on exactly the token ids ``GRPOTrainer`` builds for a
  rollout (prompt rendered with the tools and TRL's training template, the tool
  call, TRL's tool-response suffix, a short final answer), with the loss only on
  the model's own tokens: about 150 AdamW steps at lr 1e-2, continued in short
  chunks until every target token is likely (a tiny model sometimes plateaus on
  "call the tool with a random argument"). A random model never emits a valid
  tool call; after the warm-up it makes the right one. Episodes that teach one
  prompt several answers (a right and a wrong word, say) teach that mix: each
  answer then comes as often as its share of the episodes.

Usage::

    from tiny_model import Episode, build_tiny_model
    path = build_tiny_model(out_dir, tools=[env.echo, env.hint],
                            episodes=[Episode(prompt, {"text": "apple"}, "echo: apple")],
                            tool_name="echo")
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PAD = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = [PAD, IM_START, IM_END]
ADDED_TOKENS = [
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
]
MAX_VOCAB = 1024
FINAL_ANSWER = "Done."


@dataclass(frozen=True)
class Episode:
    """One rollout to warm up on: the environment's prompt text (what ``reset`` returns),
    the arguments of the right tool call, and the text the tool answers with."""

    prompt: str
    arguments: dict[str, Any]
    tool_output: str


def tool_call_text(name: str, arguments: dict[str, Any]) -> str:
    """The assistant turn of a Qwen3 tool call, as the model must emit it."""
    payload = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{payload}\n</tool_call>{IM_END}"


def _prompt_messages(prompt: str) -> list[dict[str, Any]]:
    # TRL appends reset()'s text to the last user message of the row's prompt, which
    # orsgen's load_tasks leaves empty.
    return [{"role": "user", "content": prompt}]


def _render_corpus(
    tools: Sequence[Callable[..., Any]], episodes: Sequence[Episode], tool_name: str
) -> list[str]:
    """Whole conversations rendered through Qwen3's template and TRL's training variant."""
    from transformers.utils import chat_template_utils
    from trl.chat_template_utils import qwen3_chat_template, qwen3_training_chat_template

    # Returns (rendered conversations, generation indices), whatever its annotation says.
    render: Any = chat_template_utils.render_jinja_template
    texts: list[str] = []
    for ep in episodes:
        call = {"type": "function", "function": {"name": tool_name, "arguments": ep.arguments}}
        convo = _prompt_messages(ep.prompt) + [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "name": tool_name, "content": ep.tool_output},
            {"role": "assistant", "content": FINAL_ANSWER},
        ]
        for template in (qwen3_chat_template, qwen3_training_chat_template):
            rendered, _ = render(
                conversations=[convo],
                tools=list(tools),
                chat_template=template,
                add_generation_prompt=False,
            )
            texts.append(rendered[0])
            rendered, _ = render(
                conversations=[_prompt_messages(ep.prompt)],
                tools=list(tools),
                chat_template=template,
                add_generation_prompt=True,
            )
            texts.append(rendered[0])
        texts.append(tool_call_text(tool_name, ep.arguments))
    return texts


def build_tokenizer(corpus: Sequence[str], vocab_size: int = MAX_VOCAB) -> Any:
    """A byte-level BPE with regex pre-splitting off, wrapped for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast as _Fast
    from trl.chat_template_utils import qwen3_chat_template

    PreTrainedTokenizerFast: Any = _Fast
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(ADDED_TOKENS),
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    # The trainer does not split on special tokens itself: feed it the text between them,
    # so no merge ever spans a special or added token.
    splitter = re.compile("|".join(re.escape(t) for t in SPECIAL_TOKENS + ADDED_TOKENS))
    pieces = [piece for text in corpus for piece in splitter.split(text) if piece]
    core.train_from_iterator(pieces, trainer=trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token=PAD,
        eos_token=IM_END,
        additional_special_tokens=[IM_START],
        padding_side="left",
        chat_template=qwen3_chat_template,
    )
    tok.add_tokens(ADDED_TOKENS)
    if len(tok) > MAX_VOCAB:
        raise AssertionError(f"vocabulary has {len(tok)} tokens, more than {MAX_VOCAB}")
    return tok


def build_episode_tokenizer(
    tools: Sequence[Callable[..., Any]], episodes: Sequence[Episode], tool_name: str
) -> Any:
    """The tokenizer of these episodes' whole conversations, ``tools`` offered to the model."""
    return build_tokenizer(_render_corpus(tools, episodes, tool_name))


def tool_suffix_ids(
    tok: Any, chat_template: str | None, tool_name: str, tool_output: str
) -> list[int]:
    """The ids TRL inserts after a tool call: the same computation as
    ``GRPOTrainer._get_tool_suffix_ids`` (trl 1.16) for one tool message."""
    dummy = [
        {"role": "user", "content": "dummy"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": tool_name, "arguments": {}}}],
        },
    ]
    tool_msg = [{"role": "tool", "name": tool_name, "content": tool_output}]
    prefix = tok.apply_chat_template(
        dummy,
        add_generation_prompt=False,
        tokenize=True,
        chat_template=chat_template,
        return_dict=False,
    )
    full = tok.apply_chat_template(
        dummy + tool_msg,
        add_generation_prompt=True,
        tokenize=True,
        chat_template=chat_template,
        return_dict=False,
    )
    eos = [i for i, t in enumerate(prefix) if t == tok.eos_token_id]
    if eos:
        prefix = prefix[: eos[-1] + 1]
    if full[: len(prefix)] != prefix:
        raise AssertionError("the chat template is not prefix-preserving for tool messages")
    return list(full[len(prefix) :])


def episode_ids(
    tok: Any, tools: Sequence[Callable[..., Any]], ep: Episode, tool_name: str
) -> tuple[list[int], list[int]]:
    """Token ids of one full rollout as GRPOTrainer builds them, and a 0/1 mask of the
    tokens the model itself generates (the tool call and the final answer)."""
    from trl.chat_template_utils import get_training_chat_template

    # GRPOTrainer swaps in the training template when the tokenizer's is not
    # prefix-preserving (Qwen3's is not); None means "the tokenizer's own".
    template = get_training_chat_template(tok)
    prompt = tok.apply_chat_template(
        _prompt_messages(ep.prompt),
        tools=list(tools) or None,
        chat_template=template,
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
    )["input_ids"]
    prompt = list(prompt[0]) if prompt and isinstance(prompt[0], list) else list(prompt)
    call = tok.encode(tool_call_text(tool_name, ep.arguments), add_special_tokens=False)
    suffix = tool_suffix_ids(tok, template, tool_name, ep.tool_output)
    answer = tok.encode(FINAL_ANSWER + IM_END, add_special_tokens=False)
    ids = prompt + call + suffix + answer
    mask = [0] * len(prompt) + [1] * len(call) + [0] * len(suffix) + [1] * len(answer)
    return ids, mask


def build_model(
    vocab_size: int, pad_id: int, eos_id: int, seed: int = 0, head_dim: int = 16
) -> Any:
    """A randomly initialised ~115k-parameter Qwen3ForCausalLM (~140k with ``head_dim=32``,
    the smallest head vLLM's CPU attention kernel takes; head_dim 16 kills its engine)."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=head_dim,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        pad_token_id=pad_id,
        eos_token_id=eos_id,
        bos_token_id=None,
    )
    return Qwen3ForCausalLM(config)


def _ceilings(sequences: Sequence[tuple[list[int], list[int]]]) -> list[list[float]]:
    """For every token of every sequence, the highest probability a model can give it on
    this data: the share of the sequences with the same prefix that go on with it (1.0
    where they all agree, each answer's share where the episodes teach a mix)."""
    nexts: dict[tuple[int, ...], list[int]] = {}
    for ids, _ in sequences:
        for pos in range(len(ids)):
            nexts.setdefault(tuple(ids[:pos]), []).append(ids[pos])
    return [
        [
            nexts[tuple(ids[:pos])].count(ids[pos]) / len(nexts[tuple(ids[:pos])])
            for pos in range(len(ids))
        ]
        for ids, _ in sequences
    ]


def _min_token_ratio(model: Any, batch: dict[str, Any], labels: Any, ceilings: Any) -> float:
    """The smallest ratio, over the model's own target tokens, of the probability the model
    gives the token to the highest it could (``_ceilings``)."""
    import torch

    with torch.no_grad():
        logits = model(**batch).logits[:, :-1]
    target = labels[:, 1:]
    keep = target != -100
    probs = logits.softmax(-1).gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return float((probs / ceilings[:, 1:])[keep].min())


def warm_up(
    model: Any,
    sequences: Sequence[tuple[list[int], list[int]]],
    pad_id: int,
    steps: int = 150,
    lr: float = 1e-2,
    seed: int = 0,
    min_prob: float = 0.95,
    max_steps: int = 1500,
) -> dict[str, float]:
    """Plain-PyTorch AdamW on whole rollouts, with the loss only on the model's own tokens.

    Runs ``steps`` steps, then goes on in chunks of 50 (up to ``max_steps``) until the
    model gives every one of its target tokens at least ``min_prob`` of the probability
    it could give it on this data (all of it where the episodes agree; where they teach
    a mix of answers, each answer's share): a tiny model sometimes sits on a plateau
    where it makes a tool call but picks the argument at random, and sampling would then
    miss the right word. Raises when it never gets there.
    """
    import torch

    torch.manual_seed(seed)
    width = max(len(ids) for ids, _ in sequences)
    # Left-padded like TRL's generation batches; position ids follow the attention mask.
    input_ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(sequences), width), dtype=torch.long)
    labels = torch.full((len(sequences), width), -100, dtype=torch.long)
    ceilings = torch.ones((len(sequences), width))
    for row, ((ids, mask), ceiling) in enumerate(zip(sequences, _ceilings(sequences))):
        start = width - len(ids)
        input_ids[row, start:] = torch.tensor(ids)
        attention[row, start:] = 1
        labels[row, start:] = torch.tensor([t if m else -100 for t, m in zip(ids, mask)])
        ceilings[row, start:] = torch.tensor(ceiling)
    batch = {
        "input_ids": input_ids,
        "attention_mask": attention,
        "position_ids": (attention.cumsum(-1) - 1).clamp(min=0),
    }
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    loss_value = float("nan")
    done = 0
    worst = 0.0
    while True:
        model.train()
        for _ in range(steps if done == 0 else 50):
            loss = model(**batch, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_value = float(loss.detach())
            done += 1
        model.eval()
        worst = _min_token_ratio(model, batch, labels, ceilings)
        if worst >= min_prob:
            break
        if done >= max_steps:
            raise RuntimeError(
                f"warm-up did not converge in {done} steps: the least likely target token has "
                f"{worst:.3f} (< {min_prob}) of the probability it could have, "
                f"loss {loss_value:.4f}"
            )
    return {"steps": float(done), "final_loss": loss_value, "min_token_ratio": worst}


def _save(out: Path, model: Any, tok: Any) -> None:
    """Save the model and tokenizer to ``out``; generation pads and stops with the
    tokenizer's own tokens."""
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    model.save_pretrained(out)
    tok.save_pretrained(out)


def build_tiny_model(
    out_dir: str | Path,
    tools: Sequence[Callable[..., Any]],
    episodes: Sequence[Episode],
    tool_name: str,
    *,
    steps: int = 150,
    lr: float = 1e-2,
    seed: int = 0,
    head_dim: int = 16,
) -> Path:
    """Build, warm up and save the tokenizer and model to ``out_dir``; return the path.

    ``tools`` are the callables GRPOTrainer will offer the model (an adapter's tool
    methods); ``episodes`` the rollouts to teach, one per task or several (a mix of
    answers to one prompt is taught as that mix). ``head_dim=32`` for a model that
    vLLM's CPU build serves (docs/vllm.md).
    """
    import torch

    torch.set_num_threads(1)  # two threads oversubscribe a 2-core machine
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = build_episode_tokenizer(tools, episodes, tool_name)
    model = build_model(len(tok), tok.pad_token_id, tok.eos_token_id, seed=seed, head_dim=head_dim)
    sequences = [episode_ids(tok, tools, ep, tool_name) for ep in episodes]
    stats = warm_up(model, sequences, tok.pad_token_id, steps=steps, lr=lr, seed=seed)
    _save(out, model, tok)
    (out / "warmup.json").write_text(
        json.dumps(
            {**stats, "vocab": len(tok), "rollout_tokens": [len(ids) for ids, _ in sequences]},
            indent=2,
        )
    )
    return out


def build_untrained_model(
    out_dir: str | Path,
    tools: Sequence[Callable[..., Any]],
    episodes: Sequence[Episode],
    tool_name: str,
    seed: int = 0,
) -> Path:
    """:func:`build_tiny_model` without the warm-up: the same tokenizer, random weights. It
    answers in plain text (random tokens, hardly ever a well-formed tool call), which is
    what an environment graded through a terminal tool needs when the reward is the
    environment's own draw."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = build_episode_tokenizer(tools, episodes, tool_name)
    model = build_model(len(tok), tok.pad_token_id, tok.eos_token_id, seed=seed)
    _save(out, model, tok)
    return out


def cpu_grpo_config(output_dir: Path, max_steps: int, **overrides: Any) -> Any:
    """The GRPOConfig that makes sense for a tiny model on a CPU: bf16 and activation
    checkpointing default to on and make no sense there; two rollouts per group.
    (``activation_checkpointing`` is transformers 5's name; the old ``gradient_checkpointing``
    still works but warns that it is deprecated.) ``overrides`` are further GRPOConfig
    fields (``learning_rate=...``, ``num_generations=...``) that win over these."""
    from trl import GRPOConfig  # type: ignore[attr-defined]

    settings: dict[str, Any] = dict(
        output_dir=str(output_dir),
        max_steps=max_steps,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=32,
        max_tool_calling_iterations=2,
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,
        # Every parameter takes part in the loss: under torchrun DDP would otherwise search
        # the graph for unused ones each step, and warn that it found none.
        ddp_find_unused_parameters=False,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        seed=0,
    )
    return GRPOConfig(**{**settings, **overrides})
