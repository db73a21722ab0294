"""The web front: `app` (the Flask app: POST /webhook, GET /healthz), `metrics` (GET /metrics),
`runs` and `run_page` (the run pages; `kept_page`: one as a file to keep), `bench_pages` (GET
/bench/<id>), `state` (what the views share), `security_headers`, `door` (waitress, so slow
clients never hold the server) and `serve` (the app served behind the door)."""
