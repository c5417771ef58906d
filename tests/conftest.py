"""Shared fixtures: the bundled model is loaded once per test session."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Tests open checkpoints they write under the temporary folder; the app's default roots are
# the home and working folders (see attnviz.ui.state.allowed_model_roots).
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
