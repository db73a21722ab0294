"""`cra-bot bench`: replay an installed repository's past fixes with the server's models,
scored by cra's bench, and publish the report as a page behind the run pages' gate."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.bench.mining.mine import (
    Mined,
    MineOptions,
    TestBed,
    failed_setups,
    mine,
    mine_jobs,
    throughput,
)
from agent.bench.oracle import oracle_factory, parse_label
from agent.bench.report.scores import BenchReport, build_report
from agent.bench.results import BenchResult, TestsSetting, read_results
from agent.bench.run import (
    Bench,
    Factory,
    MixedSettings,
    check_setting,
    files_before,
    run_bench,
    with_model,
)
from agent.bench.tasks import BenchTask, read_tasks
from agent.config.files import CONFIG_CANDIDATES, ModelConfig, SolveConfig
from agent.errors import AgentError
from agent.git import repo as git
from agent.llm.client import ChatModel
from agent.progress import Pace
from bot.bench.reports import BenchReports
from bot.errors import BotError
from bot.run.repo_config import limited_config
from bot.services import Services

Progress = Callable[[str], None]


class BenchRefused(BotError):
    """The bench cannot run as asked (a model the server does not allow, a bad config)."""


@dataclass(frozen=True)
class BenchRequest:
    """What to bench: the repository, its tasks (mined unless given), which models."""

    repository: str
    installation_id: int | None = None
    models: Sequence[str] = ()  # empty: the server's configured models, as a repository's runs
    tasks: Path | None = None  # a task file instead of mining the default branch
    max_commits: int = 500
    since: str | None = None
    jobs: int | None = None  # None: each step's own default (mine_jobs, solve_jobs)
    results: Path | None = None  # default: bench/OWNER/NAME/results.jsonl in the data dir
    tests: TestsSetting = "hidden"  # the fix's tests hidden from each run, or given to it

    @property
    def solve_jobs(self) -> int:
        """The tasks solved at once: as asked, else one (as `cra bench run`)."""
        return 1 if self.jobs is None else self.jobs


@dataclass(frozen=True)
class Prepared:
    """A bench ready to run: the repository's mirror and config at `base`, the models, the
    tasks, and the results file that holds what is done."""

    repository: str
    installation_id: int | None
    base: str  # the commit whose cra.toml configures the bench
    bench: Bench
    labels: list[str]
    tasks: list[BenchTask]
    results: Path


@dataclass(frozen=True)
class Published:
    """A finished bench: where its report is, and the report."""

    report_id: str
    url: str
    report: BenchReport
    results: Path


def bench_repository(
    services: Services, request: BenchRequest, progress: Progress = lambda _: None
) -> Published:
    """Mirror, mine (or read) the tasks, run them here with each model, store and publish."""
    prepared = prepare(services, request, progress)
    run_here(services, prepared, request.solve_jobs, progress)
    return publish(services, prepared)


def prepare(services: Services, request: BenchRequest, progress: Progress) -> Prepared:
    """Mirror the repository, read its config at HEAD, check the models, mine or read the
    tasks."""
    settings, repo = services.settings, request.repository
    env = services.github.git_auth_env(request.installation_id)
    mirror = services.mirrors.sync(repo, services.github.clone_url(repo), env=env)
    base = git.resolve_commit(mirror, "HEAD")
    config = repository_config(services, mirror, base)
    labels = model_labels(services, config, request.models)
    home = settings.data_dir / "bench" / repo
    bed = TestBed(
        testing=config.testing,
        sandbox=services.sandbox,
        environ=services.environ,
        work_dir=home / "work",
        cache=services.env_cache,
    )
    tasks = _tasks(services, request, mirror, bed, progress)
    bench = Bench(
        repo=mirror,
        config=config,
        sandbox=services.sandbox,
        environ=services.environ,
        data_dir=home,
        log=services.runlog,
        cache=services.env_cache,
        tests=request.tests,
    )
    results = request.results or home / "results.jsonl"
    try:
        check_setting(results, request.tests)
    except MixedSettings as exc:
        raise BenchRefused(str(exc)) from None
    return Prepared(
        repository=repo,
        installation_id=request.installation_id,
        base=base,
        bench=bench,
        labels=labels,
        tasks=tasks,
        results=results,
    )


def run_here(services: Services, prepared: Prepared, jobs: int, progress: Progress) -> None:
    """Run what the results file lacks in this process, `jobs` tasks at once."""

    def done(result: BenchResult, count: int, total: int) -> None:
        progress(f"[{count}/{total}] {result.instance_id} {result.model}: {result.outcome}")

    config = prepared.bench.config
    run_bench(
        prepared.bench,
        prepared.tasks,
        prepared.labels,
        prepared.results,
        factory_for=factories(services, prepared.bench),
        config_for=lambda label: config_for(config, label),
        jobs=jobs,
        progress=done,
    )


def publish(services: Services, prepared: Prepared) -> Published:
    """The report of the results file, stored as a page of this server."""
    settings, results = services.settings, prepared.results
    report = build_report(read_results(results), prepared.tasks, results_file=str(results))
    report_id = BenchReports(settings.data_dir / "bench" / "reports").save(
        prepared.repository, report
    )
    url = f"{(settings.public_url or '').rstrip('/')}/bench/{report_id}"
    return Published(report_id=report_id, url=url, report=report, results=results)


def repository_config(services: Services, mirror: Path, base: str) -> SolveConfig:
    """The repository's cra.toml at `base` over the server's models and limits."""
    with tempfile.TemporaryDirectory(prefix="cra-config-") as tmp:
        for rel in CONFIG_CANDIDATES:
            text = git.read_file(mirror, base, rel)
            if text is not None:
                (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
                (Path(tmp) / rel).write_text(text, encoding="utf-8")
        try:
            config, _ = limited_config(Path(tmp), services.settings)
            config.require_test_command()
        except AgentError as exc:
            raise BenchRefused(str(exc).replace(tmp + "/", "")) from exc
    return config


def model_labels(services: Services, config: SolveConfig, asked: Sequence[str]) -> list[str]:
    """The labels to run: the configured coding model's name when none are asked; each asked
    name must be one the server allows (or the oracle)."""
    if not asked:
        return [config.models.coding.model]
    allowed = services.settings.allowed_model_names()
    for label in asked:
        try:
            oracle = parse_label(label)
        except ValueError as exc:
            raise BenchRefused(str(exc)) from None
        if oracle is None and label not in allowed:
            raise BenchRefused(
                f"the server does not allow the model {label!r} "
                f"(allowed: {', '.join(allowed)}; CRA_ALLOWED_MODELS)"
            )
    return list(dict.fromkeys(asked))


def config_for(config: SolveConfig, label: str) -> SolveConfig:
    """The configured models as they are for the default label; else every role on `label`."""
    if parse_label(label) is not None or label == config.models.coding.model:
        return config
    return with_model(config, label)


def factories(services: Services, bench: Bench) -> Callable[[str, BenchTask], Factory]:
    """Model clients keyed like the server's runs; the oracle wraps them with the gold patch."""

    def factory(model: ModelConfig) -> ChatModel:
        return services.chat_factory(model, _key_for(services, model))

    def factory_for(label: str, task: BenchTask) -> Factory:
        if parse_label(label) is None:
            return factory
        oracle = oracle_factory(label, task, files_before(bench, task), tests=bench.tests)
        assert oracle is not None
        return oracle

    return factory_for


def _key_for(services: Services, model: ModelConfig) -> str | None:
    """The API key of the server whose endpoint `model` uses."""
    for endpoint in services.settings.endpoints().values():
        if endpoint.base_url == model.base_url:
            return endpoint.key()
    return None


def _tasks(
    services: Services, request: BenchRequest, mirror: Path, bed: TestBed, progress: Progress
) -> list[BenchTask]:
    """The request's task file, or the tasks mined from the mirror's history on `bed`."""
    if request.tasks is not None:
        try:
            return list(read_tasks(request.tasks))
        except AgentError as exc:
            raise BenchRefused(str(exc)) from exc
    options = MineOptions(
        max_commits=request.max_commits, since=request.since, repo_name=request.repository
    )

    pace = Pace(services.clock())

    def mined(done: int, total: int, found: Mined) -> None:
        if pace.due(done, total, services.clock()):
            progress(f"mining: {done}/{total} commits, {len(found.tasks)} tasks")

    jobs = mine_jobs(request.jobs)
    found = mine(mirror, bed, options, progress=mined, jobs=jobs, notice=progress)
    for said in failed_setups(found):
        progress(said)
    progress(f"mined: {throughput(found)}")
    return found.tasks


def write_outputs(
    published: Published, repository: str, *, out: Path | None, summary: Path | None
) -> None:
    """The report as files (`out`: HTML, JSON, the results) and as a job summary (Markdown)."""
    from agent.bench.report.html import render_html
    from agent.bench.report.text import render_markdown

    try:
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            html = render_html(published.report, repository=repository)
            (out / "report.html").write_text(html, encoding="utf-8")
            (out / "report.json").write_text(
                published.report.model_dump_json(indent=2), encoding="utf-8"
            )
            if published.results.exists():  # none when no task was found
                shutil.copyfile(published.results, out / "results.jsonl")
        if summary is not None:
            with summary.open("a", encoding="utf-8") as handle:
                handle.write(render_markdown(published.report, repository))
    except OSError as exc:
        raise BenchRefused(f"cannot write the report: {exc}") from exc
