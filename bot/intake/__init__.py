"""What a webhook delivery asks for, sans I/O: `webhooks` (the signature check and the parsing of
a delivery into an Event), `triggers` (the Event routed to the Trigger it asks for),
`command_line` (the `/cra` line a reader sees), `task` (the task text, built from untrusted issue
text that stays data) and `installations` (what an installation event makes stale)."""
