"""analysis.families against formulas written out here and against transformers' ViT."""

import numpy as np
import pytest
import torch

from attnviz.analysis import families as fam


def test_later_weight_is_the_mean_row_sum_above_the_diagonal():
    rng = np.random.default_rng(0)
    w = rng.random((2, 3, 5, 5))
    w /= w.sum(-1, keepdims=True)
    ours = fam.later_weight(w)
    for li in range(2):
        for h in range(3):
            rows = [sum(w[li, h, i, j] for j in range(i + 1, 5)) for i in range(5)]
            assert ours[li, h] == pytest.approx(sum(rows) / 5, abs=1e-12)
    causal = np.tril(w)
    assert (fam.later_weight(causal) == 0.0).all()
    assert fam.later_weight(np.full((4, 4), 0.25)) == pytest.approx(1.5 / 4)  # (3+2+1+0)/4/4


def test_strongest_sources():
    c = np.array([[0.1, 0.7, 0.2], [0.5, 0.25, 0.25]])
    idx, w = fam.strongest_sources(c)
    assert idx.tolist() == [1, 0] and w.tolist() == [0.7, 0.5]


def test_cls_patch_map_is_the_cls_row_on_the_grid(tmp_path):
    """Against transformers' ViTModel attentions: row 0 of a head, patches row by row."""
    from transformers import ViTModel

    from attnviz.engine.random_models import save_random_checkpoint

    d = save_random_checkpoint("vit", tmp_path / "vit", image_size=32, patch_size=8)
    ref = ViTModel.from_pretrained(d, local_files_only=True, attn_implementation="eager").eval()
    with torch.no_grad():
        att = torch.stack(ref(torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0)),
                              output_attentions=True).attentions)[:, 0].numpy()
    m = fam.cls_patch_map(att, 1, 2, (4, 4))
    assert m[1, 3] == att[1, 2, 0, 1 + 1 * 4 + 3]
    mean = fam.cls_patch_map(att, 0, None, (4, 4))
    np.testing.assert_allclose(mean[2, 0], att[0, :, 0, 1 + 8].mean(), rtol=1e-6)
    np.testing.assert_allclose(mean.sum() + att[0, :, 0, 0].mean(), 1.0, atol=1e-6)
    with pytest.raises(ValueError, match="grid"):
        fam.cls_patch_map(att, 0, 0, (3, 3))


def test_top_patches():
    g = np.array([[0.1, 0.5], [0.3, 0.1]])
    assert fam.top_patches(g, 2) == [(0, 1, 0.5), (1, 0, 0.3)]
