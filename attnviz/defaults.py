"""What a server shows and computes unless told otherwise, known without importing Streamlit or
torch: the sidebar's default sentence, bundled model and device. A server's limit on tokens
per trace is a setting (attnviz.settings: `settings().max_tokens`)."""

from __future__ import annotations

DEFAULT_TEXT = "I saw a saw"
DEFAULT_MODEL = "minilm"  # the sidebar's default bundled model (engine.bundled.BUNDLED)
DEFAULT_DEVICE = "auto"  # the sidebar's default device: CUDA when there is one, else the CPU
DEFAULT_MAX_TOKENS = 512  # BERT's positions: the length the random demo models take
