"""`cra-bot bench` on the server: `replay` (an installed repository's past fixes, replayed with
the server's models and scored by agent.bench), `fanout` and `jobs` (the same bench spread over a
queue's workers) and `reports` (the reports it published, one JSON file each; bot.web.bench_pages
shows them)."""
