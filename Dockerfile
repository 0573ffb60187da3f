# ServeScope explorer: the README's set-up (make install) on Debian bookworm with Node 20 and
# Python 3.11, run as a non-root user with one worker.
FROM node:20-bookworm-slim

RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv make \
 && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 10001 servescope
WORKDIR /app
COPY --chown=servescope:servescope . /app
USER servescope
RUN make install

ENV SERVESCOPE_DATA_DIR=/app/data
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD .venv/bin/python -c "import urllib.request, sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status == 200 else 1)"
CMD [".venv/bin/servescope", "serve", "--host", "0.0.0.0", "--port", "8000"]
