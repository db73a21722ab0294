"""From a webhook delivery to a recorded run: `webhooks` (the signature check and the parsing of a
delivery into an Event, sans I/O), `triggers` (the Event routed to the Trigger it asks for),
`command_line` (the `/cra` line a reader sees), `task` (the task text, built from untrusted issue
text that stays data), `admit` (a delivery admitted in one transaction: deduplicated, its run or
its busy reply) and `record` (a run stored outside that transaction: a cancel, `cra-bot action`)."""
