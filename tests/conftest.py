"""Shared fixtures (the bundled model is loaded once per test process) and the suite's tiers.

Markers (pyproject's [tool.pytest.ini_options] lists them): `e2e` (everything under
tests/e2e), `apptest` (a module that runs the app in Streamlit's AppTest: set here from the
module's source), `server` and `slow` (set in the modules). `make test-fast` leaves out all
four; `make test` runs everything on pytest-xdist workers, each module on one worker
(`--dist loadscope`: its module-scoped fixtures are built once, and its tests run in their
order), the browser tests' modules handed out first (each worker starts one test server and
one browser for those it is given). `--dist loadgroup` would not do: with pytest 9.2 it no
longer groups at all (pytest-xdist issue 1386), and a module's tests were spread over the
workers.
"""

import os
import re

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Tests open checkpoints they write under the temporary folder; the app's default roots are
# the home and working folders (see attnviz.engine.allowed_model_roots).
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

os.environ.setdefault("ATTNVIZ_MODEL_ROOTS", os.pathsep.join(
    [str(Path.home()), os.getcwd(), tempfile.gettempdir()]))

# The app keeps the lesson's trained taggers and converted models in the user's cache folder
# (settings().cache_path): the tests' servers and pages use a folder of their own, empty at
# the start, made by the run's first process (xdist's workers inherit it) and removed when
# that process ends.
_OWN_CACHE = None
if "ATTNVIZ_CACHE_DIR" not in os.environ:
    _OWN_CACHE = os.environ["ATTNVIZ_CACHE_DIR"] = tempfile.mkdtemp(prefix="attnviz-test-cache-")

import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402

# On pytest-xdist workers the cores are shared out: torch in each worker (and in the servers
# and fresh interpreters its tests start, which inherit the variable) takes its share instead
# of every worker running one thread per core on all of them.
_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _workers > 1 and "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // _workers))

# The workers run one step below the run's lesson warm-up (started at normal priority, below):
# on a machine with fewer cores than workers it gets the larger share, and the browser tests
# that wait for the taggers it keeps wait less. The servers and browsers a worker starts
# inherit its priority; the servers' own training children go to nice 19 as in the app.
WORKER_NICE = 5
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.nice(WORKER_NICE)

APPTEST = re.compile(r"\bAppTest\b|\bopen_page\(|tests\.apptest")
# Groups handed to xdist workers first (the longest): the browser tests, then modules that
# start servers, then those that run pages in AppTest.
ORDER = ("e2e", "server", "apptest")


# The browser tests' modules in the order they are handed out: the longest first, so that
# no worker is left with a long one at the end; those of the lesson last, when the run's
# warm-up (lesson_trained.warm) has kept the taggers their pages read. Each worker starts
# one test server and one browser for all the browser tests it is given.
E2E_FIRST = ("test_e2e_all_pages", "test_e2e_model_link", "test_e2e_phone", "test_e2e_explore",
             "test_e2e_step_by_step", "test_e2e_ablation", "test_e2e_research",
             "test_e2e_windows")
LESSON_LAST = ("test_e2e_class", "test_e2e_lesson", "test_e2e_presentation",
               "test_e2e_html_export", "test_e2e_lesson_phone")


def _e2e_order(item) -> int:
    stem = item.path.stem
    if stem in E2E_FIRST:
        return E2E_FIRST.index(stem)
    if stem in LESSON_LAST:
        return len(E2E_FIRST) + 1 + LESSON_LAST.index(stem)
    return len(E2E_FIRST)


def _module_source(module) -> str:
    try:
        return Path(module.__file__).read_text(encoding="utf-8")
    except (AttributeError, TypeError, OSError):
        return ""


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by these marks
def pytest_collection_modifyitems(config, items):
    sources: dict[str, str] = {}
    for item in items:
        module = item.module
        if "e2e" in item.path.parts:
            item.add_marker(pytest.mark.e2e)
        if module.__name__ not in sources:
            sources[module.__name__] = _module_source(module)
        if APPTEST.search(sources[module.__name__]):
            item.add_marker(pytest.mark.apptest)

    def rank(item) -> int:
        return next((i for i, m in enumerate(ORDER) if item.get_closest_marker(m)), len(ORDER))

    # a module (an e2e file) goes where its most demanding test puts it; stable sort: within
    # a rank, the collection order
    first: dict[str, int] = {}
    for item in items:
        module = item.module.__name__
        first[module] = min(first.get(module, len(ORDER)), rank(item))
    items.sort(key=lambda item: (first[item.module.__name__], _e2e_order(item)))


# A parallel run trains the lesson's taggers and sweeps once, first, at normal priority, in a
# process of its own (tests/lesson_trained.warm): the tests that need them, the test servers'
# training children and the command-line runs read the kept copy (the lock is waited for)
# instead of each training its own beside the others.
_WARM: list[subprocess.Popen] = []


def pytest_sessionstart(session):
    config = session.config
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return  # a worker, or a run in one process: the tests train what they need
    if "not e2e" in (config.getoption("markexpr", "") or ""):
        return  # make test-fast: none of its tests reads the sweep over seeds (marked slow);
        # the few that read seed 0's taggers train them once in their worker
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # as the app's training child: one thread
    _WARM.append(subprocess.Popen(
        [sys.executable, "-c", "from tests import lesson_trained; lesson_trained.warm()"],
        cwd=Path(__file__).resolve().parents[1], env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))


def pytest_sessionfinish(session):
    for child in _WARM:
        if child.poll() is None:
            child.terminate()
            child.wait(30)


def pytest_unconfigure(config):
    if _OWN_CACHE is not None:
        import shutil

        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


@pytest.fixture(autouse=True)
def _main_module_kept():
    """sys.modules['__main__'] as it was before the test: AppTest.from_function leaves its
    script there, and a process started later with spawn (tests/test_classroom_store.py,
    analysis.flow's workers) would run that script again and fail."""
    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main


@pytest.fixture
def lesson_kept():
    """The lesson's default taggers and sweeps kept in the run's cache folder before a test
    (a browser on a test server, a command-line run) asks for them."""
    from tests import lesson_trained

    lesson_trained.sweeps()


@pytest.fixture(scope="session")
def cpu_model():
    import attnviz

    return attnviz.load_model(device="cpu")


@pytest.fixture(scope="session")
def app_model(cpu_model):
    """The bundled model on the device the app picks by default (CUDA when present)."""
    import attnviz
    from attnviz.engine import pick_device

    device = pick_device(None)
    return cpu_model if device.type == "cpu" else attnviz.load_model(device=device)


@pytest.fixture(scope="module")
def model(request, cpu_model):
    """The bundled model. Page tests compare what a page shows with a trace computed here, and
    a page computes on the app's default device (CUDA when present), so theirs is on that
    device; every other test checks the engine on the CPU. On a machine without a GPU the two
    are the same object."""
    if request.module.__name__.rsplit(".", 1)[-1].startswith(("test_page_", "test_pages_")):
        return request.getfixturevalue("app_model")
    return cpu_model


@pytest.fixture(scope="session")
def hf_model():
    """The independent reference: transformers' BertModel in eager mode."""
    from transformers import BertModel

    from attnviz.engine import bundled_model_dir

    return BertModel.from_pretrained(
        bundled_model_dir(), local_files_only=True, attn_implementation="eager"
    ).eval()


@pytest.fixture(params=[1, 2], ids=lambda n: f"{n}-threads")
def torch_threads(request):
    """Run the test with torch on 1 and on 2 threads: results that must agree "up to float
    rounding" may not depend on the order in which a thread count adds things up."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)
