"""The bot's records beside the run log: `runs` (webhook deliveries, deduplicated, and runs, one
per trigger), `admit` (a delivery admitted in one transaction: its run or its busy reply),
`installations` (the App's installations as webhooks told of them) and `tables` (their SQLAlchemy
Core tables)."""
