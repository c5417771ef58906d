# attnviz for a lecture hall: N Streamlit workers behind nginx in one container
# (scripts/serve.py). Build and run:
#   docker build -t attnviz .
#   docker run -p 8501:8501 -e ATTNVIZ_WORKERS=4 attnviz      # then http://localhost:8501
# One worker per core is the rule of thumb; deploy/k8s.yaml runs several such pods.
FROM python:3.11-slim-bookworm

# Debian's nginx (the package make serve installs when missing) and make for `make setup`.
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends make nginx \
 && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 10001 attnviz
WORKDIR /app
COPY --chown=attnviz:attnviz . /app
USER attnviz

# The same install steps as on a laptop: `make setup` (a venv in .venv, torch first, then
# attnviz with its test extras). TORCH picks the torch build (e.g. a CUDA wheel).
ARG TORCH=torch==2.13.0
RUN make setup PYTHON=python3 TORCH="$TORCH" && rm -rf /home/attnviz/.cache/pip

ENV HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    ATTNVIZ_WORKERS=2 \
    PYTHONUNBUFFERED=1
EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s \
    CMD python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4)"
# Workers: $ATTNVIZ_WORKERS. SIGTERM (docker stop, a pod's end) stops every process.
CMD [".venv/bin/python", "scripts/serve.py", "--address", "0.0.0.0", "--port", "8501"]
