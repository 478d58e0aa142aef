# Two targets: `app` (web and worker) and `runner` (the local runner: app plus git and the
# sandbox, srt with bubblewrap, socat and ripgrep).
FROM python:3.11-slim AS app
WORKDIR /app
# Dependencies first, in a layer of their own, exactly as requirements.lock pins them: it is
# rebuilt only when the lock changes, not on every source edit.
COPY requirements.lock ./
RUN pip install --no-cache-dir -r requirements.lock
# Then the package itself, without touching the dependencies installed above.
COPY pyproject.toml README.md ./
COPY templating ./templating
COPY agents ./agents
COPY triggers ./triggers
COPY workers ./workers
COPY hookspawn ./hookspawn
RUN pip install --no-cache-dir --no-deps . \
 && useradd --create-home hookspawn \
 && mkdir -p /var/lib/hookspawn && chown hookspawn: /var/lib/hookspawn
USER hookspawn
ENV HOOKSPAWN_AGENTS_DIR=/agents/.auto
ENV HOOKSPAWN_DATA_DIR=/var/lib/hookspawn
EXPOSE 8000
CMD ["hookspawn", "web", "--host", "0.0.0.0", "--port", "8000"]

FROM app AS runner
USER root
# git stages the sessions; srt (pinned, from npm) confines setup and harness with bubblewrap,
# socat and ripgrep; the harnesses an agent names, Claude Code and Codex, pinned as
# scripts/setup pins them (each npm package brings its native program)
RUN apt-get update \
 && apt-get install -y --no-install-recommends git bubblewrap socat ripgrep nodejs npm ca-certificates \
 && npm install -g @anthropic-ai/sandbox-runtime@0.0.83 \
      @anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0 \
 && npm cache clean --force \
 && rm -rf /var/lib/apt/lists/*
# the runner runs as root so setup and harness run as HOOKSPAWN_RUNNER_USER, not as it
CMD ["hookspawn", "runner"]
