"""Shared fixtures: the bundled model is loaded once per test session."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Tests open checkpoints they write under the temporary folder; the app's default roots are
# the home and working folders (see attnviz.engine.allowed_model_roots).
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

os.environ.setdefault("ATTNVIZ_MODEL_ROOTS", os.pathsep.join(
    [str(Path.home()), os.getcwd(), tempfile.gettempdir()]))

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def model():
    import attnviz

    return attnviz.load_model(device="cpu")


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
