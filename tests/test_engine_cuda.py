"""The engine on a GPU: every family's trace on CUDA against transformers' eager model on the
same GPU (the independent reference), and against the engine's own CPU trace.

Skipped where torch sees no CUDA device (CI, laptops without a GPU). TF32 is switched off for
the comparison (float32 matrix products and convolutions in full precision, as on the CPU),
so the 1e-5 tolerance of the CPU tests holds on the GPU as well. The BERT checkpoint has the
bundled model's sizes (6 layers of 384, 12 heads) and runs at BERT's 512 tokens.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnviz
from attnviz.engine.random_models import save_random_checkpoint
from tests.test_engine_families import check, hf_model, random_ids, stack

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

CPU_TOL = 1e-4  # the same trace on two devices: different kernels, different summation orders
SIZES = {  # the bundled model's shape for BERT; small ones for the rest
    "bert": dict(hidden=384, heads=12, layers=6, intermediate=1536, positions=512),
    "roberta": dict(hidden=64, heads=4, layers=3, intermediate=128, positions=128),
    "distilbert": dict(hidden=64, heads=4, layers=3, intermediate=128, positions=128),
    "gpt2": dict(hidden=64, heads=4, layers=3, intermediate=128, positions=128),
    "bart": dict(hidden=64, heads=4, layers=2, intermediate=128, positions=128),
    "vit": dict(hidden=64, heads=4, layers=3, intermediate=128, image_size=64, patch_size=8),
}


@pytest.fixture(scope="module", autouse=True)
def full_precision():
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("cuda")
    return {f: save_random_checkpoint(f, root / f, seed=i, **SIZES[f])
            for i, f in enumerate(SIZES)}


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert", "gpt2"])
def test_text_families_on_cuda_match_hf_eager_and_the_cpu(folders, family):
    model = attnviz.load_model(folders[family], device="cuda")
    assert model.device.type == "cuda"
    ref = hf_model(folders[family], family, "cuda")
    n = min(model.max_positions, 512)
    ids = random_ids(model, n, seed=n)
    t = model.trace_ids(ids)
    with torch.no_grad():
        out = ref(torch.tensor([ids], device="cuda"), output_attentions=True,
                  output_hidden_states=True)
    check(t.hidden_states, stack(out.hidden_states), f"{family} hidden states")
    check(t.weights, stack(out.attentions), f"{family} attentions")
    on_cpu = attnviz.load_model(folders[family], device="cpu").trace_ids(ids)
    check(t.hidden_states, on_cpu.hidden_states, f"{family} cuda vs cpu", CPU_TOL)
    check(t.weights, on_cpu.weights, f"{family} weights cuda vs cpu", CPU_TOL)
    for name in ("queries", "keys", "values", "scores", "outputs"):
        assert isinstance(getattr(t, name), np.ndarray)  # traces come back as host arrays


def test_bart_on_cuda_matches_hf_eager(folders):
    model = attnviz.load_model(folders["bart"], device="cuda")
    ref = hf_model(folders["bart"], "bart", "cuda")
    t = model.trace_ids(random_ids(model, 100, seed=1))
    with torch.no_grad():
        out = ref(torch.tensor([t.token_ids.tolist()], device="cuda"),
                  decoder_input_ids=torch.tensor([t.decoder_token_ids.tolist()], device="cuda"),
                  output_attentions=True, output_hidden_states=True)
    check(t.hidden_states, stack(out.encoder_hidden_states), "encoder hidden states")
    check(t.decoder_weights, stack(out.decoder_attentions), "decoder self-attention")
    check(t.cross_weights, stack(out.cross_attentions), "cross-attention")


def test_vit_on_cuda_matches_hf_eager(folders):
    from transformers import ViTImageProcessorPil

    model = attnviz.load_model(folders["vit"], device="cuda")
    ref = hf_model(folders["vit"], "vit", "cuda")
    proc = ViTImageProcessorPil.from_pretrained(folders["vit"], local_files_only=True)
    img = np.random.default_rng(1).integers(0, 256, (61, 45, 3), dtype=np.uint8)
    t = model.trace(img)
    pixels = torch.from_numpy(proc(images=img, return_tensors="np")["pixel_values"]).cuda()
    with torch.no_grad():
        out = ref(pixel_values=pixels, output_attentions=True, output_hidden_states=True)
    check(t.hidden_states, stack(out.hidden_states), "vit hidden states")
    check(t.weights, stack(out.attentions), "vit attentions")


def test_windowed_and_shuffled_requests_on_cuda_equal_the_cpu(folders):
    """Options the pages use (a truncated window, shuffled or no positions) give the CPU's trace
    on the GPU too."""
    gpu = attnviz.load_model(folders["bert"], device="cuda")
    cpu = attnviz.load_model(folders["bert"], device="cpu")
    for options in (dict(window=2), dict(positions="none"), dict(positions="shuffled", seed=3),
                    dict(positions="sinusoidal"), dict(causal=True)):
        a = gpu.trace("I saw a saw and the saw saw me", **options)
        b = cpu.trace("I saw a saw and the saw saw me", **options)
        check(a.weights, b.weights, f"weights {options}", CPU_TOL)
        check(a.hidden_states, b.hidden_states, f"hidden states {options}", CPU_TOL)
