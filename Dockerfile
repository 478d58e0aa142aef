FROM python:3.11-slim
WORKDIR /app
# Dependencies first, in a layer of their own: it is rebuilt only when pyproject.toml changes,
# not on every source edit.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
 && pip install --no-cache-dir -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt
# Then the package itself, without touching the dependencies installed above.
COPY README.md ./
COPY templating ./templating
COPY agents ./agents
COPY triggers ./triggers
COPY workers ./workers
COPY hookspawn ./hookspawn
RUN pip install --no-cache-dir --no-deps . && useradd --create-home hookspawn
USER hookspawn
ENV HOOKSPAWN_AGENTS_DIR=/agents/.auto
EXPOSE 8000
CMD ["hookspawn", "web", "--host", "0.0.0.0", "--port", "8000"]
