# make test: lint, the docs, types and the test suite.  make demo: the bot end to end, offline.
# make try: `cra solve` on the bundled sample with scripted answers, offline, again and again.
# Each target bootstraps .venv itself.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
EXTRAS := dev,postgres,redis,treesitter
# The Docker image's and the Actions workflow's: every extra but dev.
SERVER_EXTRAS := postgres,redis,treesitter
comma := ,

.PHONY: test test-unprivileged lint docs types pytest demo try bench lock clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The locked dependencies, hash-checked, then the project itself; built with the lock's
# setuptools (--no-build-isolation), so nothing unpinned is fetched.
$(STAMP): pyproject.toml requirements/dev.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements/dev.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# uv.lock from pyproject.toml (versions kept unless pyproject asks otherwise; `uv lock --upgrade`
# first to take newer ones), then pip's requirements files from it, each with the build backend
# (the group `build`: what installs from them builds cra with --no-build-isolation). Needs uv
# (`pipx install uv`). tests/test_lock.py fails when these and pyproject.toml disagree.
EXPORT := uv export --frozen --format requirements-txt --no-emit-project --group build --quiet
lock:
	uv lock
	$(EXPORT) $(foreach e,$(subst $(comma), ,$(EXTRAS)),--extra $(e)) \
	  --output-file requirements/dev.txt
	$(EXPORT) $(foreach e,$(subst $(comma), ,$(SERVER_EXTRAS)),--extra $(e)) \
	  --output-file requirements/server.txt

lint: $(STAMP)
	$(BIN)/ruff check agent bot tests benchmarks examples
	$(BIN)/ruff format --check agent bot tests benchmarks examples

# The documentation site (mkdocs.yml, docs/) into site/, strict: a broken link or anchor, or a
# page missing from the nav or the nav naming a missing page, fails it. Quiet unless it fails
# (mkdocs's own --quiet would also hide the warnings --strict counts).
docs: $(STAMP)
	@NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict > $(VENV)/mkdocs.log 2>&1 \
	  || { cat $(VENV)/mkdocs.log; exit 1; }

types: $(STAMP)
	$(BIN)/mypy --strict agent bot

pytest: $(STAMP)
	$(BIN)/pytest -n auto  # tests are isolated (own ports, temp dirs, schemas, queue names)

test: lint docs types pytest

# The sandbox tests again as an unprivileged user, from root (as CI runs): bubblewrap through an
# unprivileged user namespace, the path of a non-root worker, which root's never takes.
SANDBOX_TESTS := tests/sandbox/test_sandbox.py tests/hostile/test_sandbox_escapes.py \
                 tests/hostile/test_repository_tricks.py tests/bot/test_sandboxes.py \
                 tests/sandbox/test_environment.py \
                 tests/gate/test_validation.py
test-unprivileged:
	.ci/sandbox-unprivileged $(SANDBOX_TESTS)

bench: $(STAMP)
	$(BIN)/python benchmarks/edits.py

demo: $(STAMP)
	$(BIN)/python examples/demo.py

try: $(STAMP)
	$(BIN)/python examples/try.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache site
