"""Which of several servers of one environment (``base_url=[a, b, ...]``) a new session goes
to, by the rules docs/scale.md states ("Several servers"): the fewest open sessions of this
class in this process among those not known to be down, ties to the earlier URL (an idle fleet
fills in order); when every server is down, the one that went away last (its reconnect window
ends last). Pure: the caller passes open counts and which servers are down since when.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def choose(
    urls: Sequence[str], open_on: Mapping[str, int], down_since: Mapping[str, float | None]
) -> int:
    """The index in ``urls`` of the server the next session goes to."""
    if not urls:
        raise ValueError("no server to choose from")
    up = [i for i, url in enumerate(urls) if down_since.get(url) is None]
    if up:
        return min(up, key=lambda i: (open_on.get(urls[i], 0), i))
    return max(range(len(urls)), key=lambda i: (down_since.get(urls[i]) or 0.0, -i))
