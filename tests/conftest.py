"""Shared fixtures: the bundled model is loaded once per test session."""

import os

# Figures are validated by plotly in the tests (the server skips it: plotting.common.VALIDATE),
# so a misspelt property fails a test; read when attnviz.plotting is first imported.
os.environ["ATTNVIZ_VALIDATE_FIGURES"] = "1"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Tests open checkpoints they write under the temporary folder; the app's default roots are
# the home and working folders (see attnviz.engine.allowed_model_roots).
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

os.environ.setdefault("ATTNVIZ_MODEL_ROOTS", os.pathsep.join(
    [str(Path.home()), os.getcwd(), tempfile.gettempdir()]))

# A fresh server stores its first view in the user's cache folder (attnviz/first_view.py):
# the tests' servers and pages use a folder of their own, empty at the start.
os.environ.setdefault("ATTNVIZ_CACHE_DIR", tempfile.mkdtemp(prefix="attnviz-test-cache-"))

import pytest  # noqa: E402


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
