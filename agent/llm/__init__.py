"""Model calls: `client` (Ollama and OpenAI-compatible servers over HTTP, with retries; the
ChatModel protocol is the seam) and `wire` (their formats), `router` (role → model), `logged`
(every call checked against window and budgets, then recorded), `budget` (token estimates and
ceilings), `binary` and `judgments` (yes/no questions and their cache), `deadline`, `probe` (what
a server says about itself) and `thinking` (`<think>` blocks split off)."""
