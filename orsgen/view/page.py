"""The viewer page: one HTML file with the run's records, the style and the script inline.
Its Content-Security-Policy (``default-src 'none'``, images only from ``data:`` URLs) keeps
it from reaching the network."""

from __future__ import annotations

import json
from dataclasses import asdict
from importlib import resources

from orsgen.view.load import Run

POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"

_BODY = """<header>
<h1 id="title"></h1>
<div id="facts"></div>
<div id="summary"></div>
<details id="tools" hidden><summary></summary><table></table></details>
</header>
<div id="filters">
<span>verdict
<label><input type="checkbox" id="f-scored" checked> scored</label>
<label><input type="checkbox" id="f-unfinished" checked> unfinished</label>
<label><input type="checkbox" id="f-failed" checked> failed</label></span>
<label id="f-stops" hidden>stop <select id="f-stop"><option value="">any</option></select></label>
<label>task <input type="text" id="f-task" placeholder="e.g. 3,5-9"></label>
<label>reward from <input type="number" id="f-rmin" step="any"></label>
<label>to <input type="number" id="f-rmax" step="any"></label>
<label>search <input type="search" id="f-text" placeholder="text in transcripts"></label>
<span class="legend"><span class="cell" style="background:#1f9d55"></span> pass
<span class="cell" style="background:hsl(10,70%,52%)"></span> scored 0
<span class="cell unfinished"></span> unfinished <span class="cell failed"></span> failed</span>
<span id="shown"></span>
</div>
<main>
<div id="gridwrap"><div id="gridhead"></div><div id="grid"></div></div>
<section id="rollout"><p class="empty">Click a cell of the grid to read its rollout.</p></section>
</main>
<noscript>This page needs JavaScript (it runs from the file; nothing is fetched).</noscript>
"""


def _asset(name: str) -> str:
    return resources.files("orsgen.view").joinpath("assets", name).read_text(encoding="utf-8")


def _embedded(run: Run) -> str:
    """The run as JSON that cannot end its ``<script>`` element early."""
    text = json.dumps(asdict(run), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(run: Run) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        "<title>orsgen view</title>\n"
        f"<style>\n{_asset('viewer.css')}</style>\n</head>\n<body>\n{_BODY}"
        f'<script id="run-data" type="application/json">{_embedded(run)}</script>\n'
        f"<script>\n{_asset('viewer.js')}</script>\n</body>\n</html>\n"
    )
