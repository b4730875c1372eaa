"""Which of several servers of one environment a new session goes to.

``base_url=[a, b, ...]`` names servers that serve the same environment. Each new session
goes to the server with the fewest open sessions of this adapter class in this process,
among those not known to be down; ties go to the earlier URL, so a run that starts with
an idle fleet fills it in order. Every later request of a session goes to the server that
created it (an ORS session lives in one server's memory). A server that stopped answering
gets no new sessions until a probe finds it answering again; when every server is down,
the one that went away last is tried (its reconnect window ends last).

Pure: the caller passes what it knows (open counts, which servers are down, and since when).
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
