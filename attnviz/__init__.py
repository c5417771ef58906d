"""attnviz: see self-attention, from the lecture's formulas to the heads of real transformers.

    import attnviz
    model = attnviz.load_model()                          # the bundled all-MiniLM-L6-v2
    t = model.trace("I saw a saw")                        # every intermediate
    t = model.trace(attnviz.TraceRequest("I saw a saw", window=1))   # the same, as a request
    t.weights                                             # rows = queries, cols = keys
    model.trace("I saw a saw", ablate=attnviz.Ablation(heads=((0, 2),)))  # one head off

    gpt2 = attnviz.load_model("gpt2")                     # a Hub id from your HF cache, offline
    attnviz.head_view(t)                                  # a notebook view; .save("view.html")
"""

__version__ = "0.1.0"
__all__ = ["ARRAY_FIELDS", "Ablation", "DECODER_FIELDS", "ImageInput", "Model", "ModelError",
           "Patch", "Trace", "TraceRequest", "View", "attention", "cached_models", "head_view",
           "load_model", "model_view"]


_ENGINE = {"ARRAY_FIELDS", "Ablation", "DECODER_FIELDS", "ImageInput", "Model", "ModelError",
           "Patch", "Trace", "TraceRequest", "attention", "cached_models", "load_model"}


_SUBPACKAGES = {"analysis", "cli", "engine", "export", "i18n", "notebook", "plotting", "ui"}


def __getattr__(name: str):
    """The engine's names load torch when first used (importing attnviz itself does not:
    scripts/run_app.py reads its settings before the server starts);
    head_view, model_view and View load Plotly only when first used."""
    if name in _ENGINE:
        from . import engine

        return getattr(engine, name)
    if name in ("View", "head_view", "model_view"):
        from . import notebook

        return getattr(notebook, name)
    if name in _SUBPACKAGES:  # attnviz.engine.Limits after a bare `import attnviz`
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'attnviz' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
