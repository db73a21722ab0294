"""The one landing path: `loop` (a step, or the steps that land together with it, implemented,
gated and retried — a single step is a group of one), `outcome` (what became of a landing: the
error-to-outcome mapping, the one failure describer), `attempt` (one attempt at a step within its
budgets), `gate` (an attempt judged by the gate against the accepted state) and `blame` (which
of the steps landing together a failure points to)."""
