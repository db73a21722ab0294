"""cra, the Clean Room Agent: the solve pipeline, its run log and its command line."""

import sys

# `import httpx` also imports httpx's own command-line client when click is installed (it is:
# Flask and RQ need it), and with it click and pygments: ~11 ms on every cra start, for a tool
# cra never runs. Marked absent, the module makes httpx define the stub it uses when that
# client's dependencies are missing; nothing else changes.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
