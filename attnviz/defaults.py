"""What a server shows and computes unless told otherwise, known without importing Streamlit or
torch (a fresh server's preload reads them before either: attnviz/first_view.py): the
sidebar's default sentence and device, and a server's limit on tokens per trace."""

from __future__ import annotations

import os

DEFAULT_TEXT = "I saw a saw"
DEFAULT_DEVICE = "auto"  # the sidebar's default device: CUDA when there is one, else the CPU
DEFAULT_MAX_TOKENS = 512  # tokens per trace on a server (ATTNVIZ_MAX_TOKENS)


def server_max_tokens() -> int:
    """Tokens per trace a server computes (ATTNVIZ_MAX_TOKENS, default 512: BERT's maximum;
    a GPT-2 or BART could otherwise ask for 1024, four times the memory per trace)."""
    try:
        value = int(os.environ.get("ATTNVIZ_MAX_TOKENS", DEFAULT_MAX_TOKENS))
    except ValueError:
        value = DEFAULT_MAX_TOKENS
    return max(1, value)
