"""The container and Kubernetes deployment (Dockerfile, deploy/k8s.yaml) agree with the app.

Docker and Kubernetes do not run here, so these read the files: the manifest's stickiness
(Service sessionAffinity ClientIP, ingress-nginx cookie affinity, websocket timeouts), that its
selectors, ports and probes line up, and that the Dockerfile installs with `make setup` (the
same steps as a laptop, the Makefile's torch), installs nginx, and starts scripts/serve.py on
the port it exposes, the manifest's containerPort, the Makefile's default PORT and
scripts/serve.py's default port.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
HOUR = 3600


@pytest.fixture(scope="module")
def manifest() -> dict:
    docs = [d for d in yaml.safe_load_all((ROOT / "deploy" / "k8s.yaml").read_text()) if d]
    kinds = [d["kind"] for d in docs]
    assert sorted(kinds) == ["Deployment", "Ingress", "Service"], kinds
    return {d["kind"]: d for d in docs}


@pytest.fixture(scope="module")
def dockerfile() -> dict:
    """Instruction -> list of arguments (continuation lines joined, comments dropped)."""
    text = (ROOT / "Dockerfile").read_text()
    text = re.sub(r"\\\n", " ", "\n".join(line for line in text.splitlines()
                                          if not line.lstrip().startswith("#")))
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.setdefault(word.upper(), []).append(rest.strip())
    return out


def makefile_default(name: str) -> str:
    match = re.search(rf"^{name} \?= *(\S+)", (ROOT / "Makefile").read_text(), re.M)
    assert match, name
    return match.group(1)


def serve_default_port() -> int:
    match = re.search(r'"--port", type=int, default=(\d+)', (ROOT / "scripts" /
                                                              "serve.py").read_text())
    assert match
    return int(match.group(1))


def test_service_keeps_a_client_on_one_pod(manifest):
    spec = manifest["Service"]["spec"]
    assert spec["sessionAffinity"] == "ClientIP"
    assert spec["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"] >= HOUR


def test_ingress_pins_a_browser_to_a_pod_with_a_cookie(manifest):
    notes = manifest["Ingress"]["metadata"]["annotations"]
    prefix = "nginx.ingress.kubernetes.io/"
    assert notes[prefix + "affinity"] == "cookie"
    assert notes[prefix + "affinity-mode"] == "persistent"  # scaling never moves a session
    cookie = notes[prefix + "session-cookie-name"]
    assert cookie and cookie != "attnviz_worker"  # not the pod's own nginx cookie
    assert int(notes[prefix + "session-cookie-max-age"]) >= HOUR
    # A websocket is open for a whole lecture; ingress-nginx's default is 60 s of silence.
    assert int(notes[prefix + "proxy-read-timeout"]) >= HOUR
    assert int(notes[prefix + "proxy-send-timeout"]) >= HOUR
    assert manifest["Ingress"]["spec"]["ingressClassName"] == "nginx"


def test_selectors_ports_and_probes_line_up(manifest, dockerfile):
    dep, svc, ing = manifest["Deployment"], manifest["Service"], manifest["Ingress"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert svc["spec"]["selector"].items() <= labels.items()
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    (svc_port,) = svc["spec"]["ports"]
    assert ports[svc_port["targetPort"]] == expose_port(dockerfile)
    (rule,) = ing["spec"]["rules"]
    backend = rule["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == svc["metadata"]["name"]
    assert backend["port"]["name"] == svc_port["name"]
    for probe in ("readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert get["path"] == "/_stcore/health" and get["port"] in ports
    env = {e["name"]: e["value"] for e in container["env"]}
    workers = int(env["ATTNVIZ_WORKERS"])
    assert workers >= 1 and float(container["resources"]["requests"]["cpu"]) >= workers


def expose_port(dockerfile) -> int:
    (expose,) = dockerfile["EXPOSE"]
    return int(expose.split("/")[0])


def test_dockerfile_installs_like_the_makefile_and_serves_its_port(dockerfile):
    runs = " ".join(dockerfile["RUN"])
    assert "make setup" in runs  # the Makefile's own steps: venv, torch, attnviz
    assert re.search(r"apt-get install .*\bnginx\b", runs)
    (torch,) = [a for a in dockerfile["ARG"] if a.startswith("TORCH=")]
    # the Makefile's default torch is the lock file's: the image installs the same one
    assert re.search(r"^TORCH \?= \$\(shell grep '\^torch==' \$\(LOCK\)\)$",
                     (ROOT / "Makefile").read_text(), re.M)
    assert re.search(r"^LOCK := requirements\.lock$", (ROOT / "Makefile").read_text(), re.M)
    (locked,) = [line for line in (ROOT / "requirements.lock").read_text().splitlines()
                 if line.startswith("torch==")]
    assert torch == f"TORCH={locked}"
    (cmd,) = dockerfile["CMD"]
    argv = json.loads(cmd)  # exec form: the launcher is PID 1 and gets docker's SIGTERM
    assert argv[:2] == [".venv/bin/python", "scripts/serve.py"]
    port = int(argv[argv.index("--port") + 1])
    assert port == expose_port(dockerfile) == int(makefile_default("PORT"))
    assert port == serve_default_port()
    assert argv[argv.index("--address") + 1] == "0.0.0.0"
    assert any("ATTNVIZ_WORKERS" in e for e in dockerfile["ENV"])
    (healthcheck,) = dockerfile["HEALTHCHECK"]
    assert f"127.0.0.1:{port}/_stcore/health" in healthcheck
    assert dockerfile["USER"] and dockerfile["USER"][0] != "root"


def test_dockerignore_leaves_out_the_local_venv_and_outputs():
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert {".venv", ".git", "test-output"} <= ignored
    # ... but not what the image needs to build and run.
    for needed in ("app.py", "pages", "attnviz", "scripts", "Makefile", "pyproject.toml",
                   ".streamlit"):
        assert needed not in ignored and (ROOT / needed).exists()

