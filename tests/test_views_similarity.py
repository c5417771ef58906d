"""views.similarity's occlusion without Streamlit: the rank correlations say over how many tokens
they are taken, and the occlusion caption says why "removed" and "→ [MASK]" can disagree,
with the tokens where they do counted here from analysis.occlusion (itself checked against a
plain Hugging Face loop in test_analysis_occlusion)."""

import numpy as np

from attnviz.analysis.attribution import attribute
from attnviz.analysis.occlusion import occlude
from attnviz.views import similarity as view
from attnviz.views.blocks import Markdown, Table

A, B = "I saw a saw", "A saw cuts wood."


def test_occlusion_counts_tokens_and_says_that_removing_moves_the_rest(model):
    res = attribute(model, A, B, steps=8)
    occ = occlude(model, A, B)
    t = model.trace(A)
    blocks = view.panel("A", res, "a", t, occ, view.attention_views(t))
    (rho,) = [b for b in blocks if isinstance(b, Table) and "method" in b.columns]
    assert "Spearman ρ with IG (over 4 tokens)" in rho.columns  # i, saw #2, a, saw #4
    said = "\n".join(b.text for b in blocks if isinstance(b, Markdown))
    assert "Removing a token moves every later token up one place" in said
    assert "**occlusion**: each token taken away alone" in view.intro()[1].text
    labels = ["[CLS]", "i", "saw #2", "a", "saw #4", "[SEP]"]
    apart = [k for k in range(1, 5) if occ.remove[k] * occ.mask[k] < 0]
    if apart:
        k = max(apart, key=lambda k: abs(occ.remove[k] - occ.mask[k]))
        assert (f"disagree in sign for {len(apart)} of the tokens; most for `{labels[k]}`: "
                f"{occ.remove[k]:+.3f} removed, {occ.mask[k]:+.3f} masked.") in said
    else:
        assert "disagree in sign" not in said
    assert np.isnan(occ.remove[0]) and np.isnan(occ.remove[-1])
