"""The GitHub side of the bot, on PyGithub: `api` (the REST calls a run makes), `answers` (what
they answer, typed: issues, pull requests, permissions),
`calls` (one call made safely: errors as bot.errors, retries), `tokens` (a static token or the
App's installation tokens) and `app_key` (the App's private key, checked at start)."""
