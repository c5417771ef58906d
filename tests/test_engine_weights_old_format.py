"""A .bin in PyTorch's old (non-zip) format cannot be memory-mapped, so it is read whole: one
larger than engine.weights.MAX_OLD_FORMAT is refused unread, with the one command that saves
it again in today's format; a small one still loads (test_hostile_cache). Before the refusal
an old-format file under the byte cap (4 GB by default) was read whole: +1 GB for a 1 GB file.
"""

from __future__ import annotations

import os

from attnviz.engine import ModelError, load_model
from attnviz.engine.weights import MAX_OLD_FORMAT
from tests.test_hostile_cache import bert, bin_checkpoint, peak_growth_mb  # noqa: F401 (fixture)


def test_a_large_old_format_bin_is_refused_unread_with_the_way_to_convert_it(bert, tmp_path):  # noqa: F811
    folder = bin_checkpoint(bert, tmp_path / "m", _use_new_zipfile_serialization=False)
    size = MAX_OLD_FORMAT + (88 << 20)  # 600 MB (sparse here), under the default byte cap
    os.truncate(folder / "pytorch_model.bin", size)
    grew, result = peak_growth_mb(lambda: load_model(folder))
    assert isinstance(result, ModelError), result
    message = str(result)
    assert "old (non-zip) format" in message and "600 MB" in message and "512 MB" in message
    assert "torch.save(torch.load('pytorch_model.bin', weights_only=True)" in message
    assert "\n" not in message
    assert grew < 64, grew  # not read


def test_the_conversion_it_names_gives_a_file_that_loads(bert, tmp_path):  # noqa: F811
    """The command the refusal names, run on an old-format file, gives one that loads."""
    import torch

    folder = bin_checkpoint(bert, tmp_path / "m", _use_new_zipfile_serialization=False)
    path = folder / "pytorch_model.bin"
    torch.save(torch.load(path, weights_only=True), path)
    assert load_model(folder).n_layers == 2
