"""Shared fixtures: the bundled model is loaded once per test session."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

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
