FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY templating ./templating
COPY agents ./agents
COPY triggers ./triggers
COPY workers ./workers
RUN pip install --no-cache-dir . && useradd --create-home hookspawn
USER hookspawn
ENV HOOKSPAWN_AGENTS_DIR=/agents/.auto
EXPOSE 8000
CMD ["hookspawn", "web", "--host", "0.0.0.0", "--port", "8000"]
