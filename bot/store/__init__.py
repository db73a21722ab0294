"""The bot's records beside the run log: `runs` (runs, one per trigger, and BotStore),
`deliveries` (webhook delivery ids, deduplicated), `admit` (a delivery admitted in one transaction:
its run or its busy reply), `record` (a run stored outside that transaction: a cancel, `cra-bot
action`), `installations` (the App's installations as webhooks told of them) and `tables` (their
SQLAlchemy Core tables)."""
