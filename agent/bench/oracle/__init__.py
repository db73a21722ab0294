"""The oracle: a model that answers every call of cra's normal plan/edit path with the gold
patch (with the fix's tests hidden, also its changes to the existing tests that pinned the
behaviour it changes, as its commit made them). One part, one step per changed file, the files
landing together as one change (as a planner is asked to plan a fix across files), a step
declaring `changes_existing_tests` where
its gold edits change tests the gate counts (doctest examples) and "yes" to the gate's question
about those changes, edit blocks made from the patch's hunks for the file the step names (by
whole path), "yes" to retrieval questions. On a healthy install it resolves every mined task,
which checks the harness on real code before any model is blamed. With a noise mode
(`oracle:edits`, …) its answers are spoiled with a small model's typical mistakes at a rate, to
measure how much of that the harness absorbs.

`oracle:context` answers only from what each prompt shows: a plan names only the fix's files
whose path or code the prompt shows (else the shown file closest to them), an edit is written
only for a hunk whose changed lines the implement prompt shows in its file, anchored on the
lines of git's context shown beside them (else it asks for the file once, then gives up), and a
retrieval question is answered yes only about a file of the fix or a definition it changes. Its
rate is the ceiling the clean room puts on any model; its gap to the plain oracle's is what
retrieval loses. It combines with a noise mode: `oracle:context+edits@0.3`.

Mistake modes (`wrong-judgments`, `wrong-plans`, `wrong-edits`, `partial-edits`, `wrong-tests`,
or `small` for all of them at calibrated rates) make it wrong about substance, not format: the
mistakes come from `mistakes`, which of them a task holds from its misconceptions
(`misconceptions`), so a retry repeats a mistake more often than not. They combine with
`context`, with each other and with one noise mode: `oracle:context+wrong-edits@0.5`.

Asked for a reproduction (a test before the fix), it answers with the tests the fix adds: new
test files, test code files it only adds to, data files whole; context-honest, only those whose
place the prompt shows. A test file whose existing tests the fix changes comes with the fix.

The modules: `label` (a label read), `model` (the oracle's ChatModel and its factory), `plan`
(its plan: order, declared test changes, the steps an adjustment keeps), `sight` (what a prompt
shows of the fix), `noise` (format mistakes), `mistakes` and `misconceptions`
(substantive mistakes, and which a task holds).
"""

from __future__ import annotations

# bot.bench.replay imports these from here
from agent.bench.oracle.label import parse_label as parse_label
from agent.bench.oracle.model import oracle_factory as oracle_factory
