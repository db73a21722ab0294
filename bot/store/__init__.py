"""The bot's records beside the run log: `runs` (runs, one per trigger, and BotStore),
`deliveries` (webhook delivery ids, deduplicated), `installations` (the App's installations as
webhooks told of them) and `tables` (their SQLAlchemy Core tables)."""
