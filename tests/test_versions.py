"""The versions attnviz declares are the versions it works with.

- pyproject.toml's lowest Streamlit and Plotly: both are installed into a scratch environment
  (a venv of this interpreter that sees the project's packages through a .pth file, with
  streamlit and plotly at those versions, and whatever older dependencies they ask for,
  inside it), where every page of the router opens in AppTest with no exception or error
  box, and draws its charts.
- requirements.lock (what `make setup` installs) pins every dependency within pyproject's
  ranges, and this environment runs the locked versions: the versions the tests ran on.

The scratch environment is kept under ~/.cache/attnviz-test-versions (one per set of
versions and project environment) and made again when missing; pip's cache makes a new one
quick. Only an unreachable package registry skips the test, saying so.
"""

from __future__ import annotations

import hashlib
import json
import re
import site
import subprocess
import sys
import venv
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
LOCK = ROOT / "requirements.lock"
AT_LEAST = ("streamlit", "plotly")
# pip's words for a registry it could not reach (anything else is a real failure).
UNREACHABLE = re.compile(r"NewConnectionError|Temporary failure in name resolution|"
                         r"Name or service not known|Max retries exceeded|ConnectTimeout|"
                         r"Network is unreachable|Could not fetch URL|ProxyError")


def declared() -> list[Requirement]:
    """pyproject.toml's [project] dependencies (read without tomllib, which 3.10 lacks)."""
    text = PYPROJECT.read_text(encoding="utf-8")
    block = re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M).group(1)
    return [Requirement(r) for r in re.findall(r'^\s*"([^"]+)"', block, re.M)]


def extras() -> list[Requirement]:
    """pyproject.toml's test extra."""
    text = PYPROJECT.read_text(encoding="utf-8")
    block = re.search(r"^test = \[(.*?)^\]", text, re.S | re.M).group(1)
    return [Requirement(r) for r in re.findall(r'^\s*"([^"]+)"', block, re.M)]


def minimum(req: Requirement) -> str:
    lows = [s.version for s in req.specifier if s.operator == ">="]
    assert len(lows) == 1, f"{req}: one lower bound (>=) expected"
    return lows[0]


def locked() -> dict[str, str]:
    """{normalised name: version} of requirements.lock."""
    out = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            out[norm(name)] = version
    return out


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# --------------------------------------------------------------------- the lock file
def test_every_dependency_is_bounded_and_locked_within_its_range():
    lock = locked()
    for req in [*declared(), *extras()]:
        assert norm(req.name) in lock, f"{req.name} is not in requirements.lock"
        assert Version(lock[norm(req.name)]) in req.specifier, \
            f"requirements.lock's {req.name}=={lock[norm(req.name)]} is outside {req}"
    for req in declared():  # the app's own: an upper bound where the next major may break it
        assert any(s.operator == "<" for s in req.specifier) or req.name == "orjson", \
            f"{req} has no upper bound"


def test_the_tests_run_on_the_locked_versions():
    """What `make setup` installed is the lock, so the suite ran on it. torch is left out: a
    CPU or CUDA build of any release the venv already had is kept (the Makefile's TORCH)."""
    differ = {}
    for name, version in locked().items():
        if name == "torch":
            continue
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            differ[name] = (version, None)
            continue
        if Version(installed) != Version(version):
            differ[name] = (version, installed)
    assert not differ, f"(locked, installed) differ: {differ}; run `make setup`"


# ------------------------------------------------------------- the declared minimums
OPEN_EVERY_PAGE = r"""
import json, os, sys
sys.path.insert(0, os.getcwd())
import plotly, streamlit
from streamlit.testing.v1 import AppTest
from attnviz.ui.router import DEFAULT_PAGE, PAGES
from tests.plotly_json import charts

app = os.path.abspath("app.py")
out = {"streamlit": streamlit.__version__, "plotly": plotly.__version__,
       "streamlit_file": streamlit.__file__, "plotly_file": plotly.__file__, "pages": {}}
for path, *_ in PAGES:
    if not os.path.isfile(path):
        continue
    at = AppTest.from_file(app, default_timeout=300)
    at.run()
    if path != DEFAULT_PAGE and not at.exception:
        at.switch_page(path)
        at.run()
    out["pages"][path] = {"exceptions": [str(e.value) for e in at.exception],
                          "errors": [str(e.value) for e in at.error],
                          "elements": len(at.main), "charts": len(charts(at))}
print("RESULT " + json.dumps(out))
"""


def scratch_env(pins: dict[str, str]) -> Path:
    """A venv of this interpreter that sees this environment's packages (a .pth file) and has
    `pins` (name -> version) installed inside it; made once, then reused."""
    here = site.getsitepackages()[0]
    key = hashlib.sha256(json.dumps([sys.executable, here, sorted(pins.items())])
                         .encode()).hexdigest()[:12]
    env = Path.home() / ".cache" / "attnviz-test-versions" / (
        "-".join(f"{k}{v}" for k, v in sorted(pins.items())) + "-" + key)
    python = env / "bin" / "python"
    if (env / "complete").is_file() and python.exists():
        return python
    venv.EnvBuilder(clear=True, with_pip=False).create(env)
    sp = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                        capture_output=True, text=True, check=True).stdout.strip()
    Path(sp, "attnviz-project.pth").write_text(here + "\n")
    # --no-compile: the one process that opens the pages compiles what it imports; pip would
    # byte-compile every file of both packages (plotly's validators are thousands)
    run = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-compile",
         "--disable-pip-version-check", *(f"{k}=={v}" for k, v in pins.items())],
        capture_output=True, text=True, timeout=900)
    if run.returncode != 0:
        log = run.stdout[-3000:] + run.stderr[-3000:]
        if UNREACHABLE.search(log):
            pytest.skip(f"the package registry is unreachable: {' '.join(pins)} at their "
                        f"declared minimums cannot be installed\n{log[-800:]}")
        pytest.fail(f"pip could not install {pins}:\n{log}")
    (env / "complete").write_text("")
    return python


@pytest.mark.slow
def test_every_page_opens_at_the_declared_minimums():
    pins = {req.name: minimum(req) for req in declared() if req.name in AT_LEAST}
    assert set(pins) == set(AT_LEAST), pins
    python = scratch_env(pins)
    run = subprocess.run([str(python), "-c", OPEN_EVERY_PAGE], cwd=ROOT, capture_output=True,
                         text=True, timeout=1200)
    lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    assert run.returncode == 0 and lines, run.stdout[-3000:] + run.stderr[-5000:]
    got = json.loads(lines[-1][len("RESULT "):])
    for name, version in pins.items():  # those versions ran, from the scratch environment
        assert Version(got[name]) == Version(version), (name, got[name], version)
        assert got[f"{name}_file"].startswith(str(python.parents[1])), got[f"{name}_file"]
    from tests.pages_list import existing_pages

    assert sorted(got["pages"]) == sorted(existing_pages())
    broken = {page: r for page, r in got["pages"].items() if r["exceptions"] or r["errors"]}
    assert not broken, (f"at streamlit {pins['streamlit']} and plotly {pins['plotly']}: "
                        f"{json.dumps(broken, indent=1)[:6000]}\n{run.stderr[-3000:]}")
    assert all(r["elements"] and r["charts"] for r in got["pages"].values()), got["pages"]
