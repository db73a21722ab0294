# cra-bot, the GitHub App server: `docker build -t cra .`, then see docs/deploying.md → Docker.
# The tests of the repositories cra works on run inside this container, in its bubblewrap
# sandbox: build your own image FROM this one with their toolchain (Node.js, …) installed, or
# let each repository's testing.setup_command install its dependencies.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# git: mirrors, worktrees, commits and pushes (cra runs git as a subprocess).
# bubblewrap: the sandbox of every repository command (setup, tests, lint, type check); it
# needs `docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined
# --security-opt systempaths=unconfined` (docs/sandbox.md); prlimit and setpriv come with
# util-linux, already in the base image. slirp4netns: the network of the setup step, its own
# (outbound only), without this container's loopback, where the bot's services may listen.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git bubblewrap slirp4netns \
    && rm -rf /var/lib/apt/lists/*

# A fixed uid, so that a host directory mounted on /data can be given to it.
RUN groupadd --gid 10001 cra \
    && useradd --uid 10001 --gid cra --create-home --shell /usr/sbin/nologin cra

WORKDIR /opt/cra
# The locked dependencies of every extra but dev and the build backend (`make lock` writes
# them), hash-checked; then cra itself without them, built with that backend rather than one
# pip's build isolation would fetch unpinned. A layer of its own: a change to the code does not
# reinstall them.
COPY requirements/server.txt ./requirements/
RUN pip install --no-cache-dir --require-hashes -r requirements/server.txt
COPY pyproject.toml README.md app.yml ./
COPY agent ./agent
COPY bot ./bot
COPY migrations ./migrations
RUN pip install --no-cache-dir --no-deps --no-build-isolation .

# The database (SQLite by default), repository mirrors and worktrees.
ENV CRA_DATA_DIR=/data
RUN mkdir -p /data && chown cra:cra /data
VOLUME ["/data"]

USER cra
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
CMD ["cra-bot", "serve", "--host", "0.0.0.0", "--port", "8000"]
