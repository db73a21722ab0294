"""The cheap checks before a run spends its first model call: servers answer, tests can start.

A model server that refuses connections is reported at once (retrying cures nothing there), and
a test command the shell could not start — not found, not executable — ends the run after the
baseline, before planning, naming the command. Both are the doctor's checks, made fatal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from agent.config.files import ModelConfig, ModelsConfig
from agent.doctor.checks import Where, model_finding
from agent.errors import PreflightFailed as PreflightFailed  # raised here; lives in errors
from agent.llm.probe import ServerState, find_model, probe_server
from agent.models import ValidationResult

CANNOT_START = (126, 127)  # the shell's "found but not executable" and "not found"
_SHELL_COMPLAINT = re.compile(
    r"not found|permission denied|no such file or directory|cannot execute|is a directory",
    re.IGNORECASE,
)


def require_model_servers(
    models: ModelsConfig,
    keys: Mapping[str, str | None],
    where: Where,
    roles: Sequence[str] = ("reasoning", "coding", "classifier"),
) -> list[str]:
    """PreflightFailed when a role's server cannot be reached; the other problems (a model not
    listed, a key refused) as warning lines: the first call says them too, at once, and a
    listing may not know every name a server answers to."""
    servers: dict[tuple[str, str, str | None], ServerState] = {}
    warnings: list[str] = []
    for role in roles:
        config: ModelConfig = getattr(models, role)
        server_key = (config.provider, config.base_url, keys.get(role))
        if server_key not in servers:
            servers[server_key] = probe_server(*server_key)
        state = find_model(servers[server_key], config, keys.get(role), window=False)
        finding = model_finding(role, config, state, where)
        line = f"the {finding.check}: {finding.detail} → {finding.fix}"
        if not state.server.reachable:
            raise PreflightFailed(line)
        if finding.status == "fail":
            warnings.append(line)
    return warnings


def require_test_command_started(baseline: ValidationResult, command: str | None) -> None:
    """PreflightFailed when the baseline shows the shell could not start the test command."""
    if command is None or baseline.exit_code not in CANNOT_START:
        return
    if baseline.failing_tests or baseline.passing_tests or baseline.report.reported:
        return  # tests ran; a later command of the suite is what failed
    complaint = next(
        (
            line.strip()
            for line in (baseline.test_output or "").splitlines()
            if _SHELL_COMPLAINT.search(line)
        ),
        None,
    )
    if complaint is None:
        return
    raise PreflightFailed(
        f"the test command {command!r} could not start (exit {baseline.exit_code}: "
        f"{complaint}) → install what it runs, or fix testing.test_command in the repository's "
        ".github/cra.toml"
    )
