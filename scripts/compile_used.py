"""Write the cached bytecode (.pyc) of the modules attnviz and its tests import, once, after
`make setup` has installed the packages with `pip install --no-compile`.

pip byte-compiles every .py file of every package it installs (torch alone has thousands,
most of which attnviz never imports). Python compiles a module the first time it is imported
and keeps the result beside it, unless PYTHONDONTWRITEBYTECODE is set (some CI images set it):
then every process would compile every module it imports, each time. So this script imports
what the app and the tests use, with bytecode writing on whatever the environment says:

- every module of attnviz (the engine, analysis, plotting, views, the Streamlit pages' code);
- transformers' model, configuration and tokenizer modules of every family the engine reads
  (attnviz.engine.kinds.MODEL_TYPES), which attnviz imports only when a checkpoint asks;
- the test tools the `test` extra installs;
- every module of the packages that the server and the pages' figures import lazily, at a
  page's first use (WHOLE: Streamlit's server, Plotly's figure classes, ...), compiled with
  compileall.

A module missed here still works: it is compiled when imported.

    python scripts/compile_used.py
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import subprocess
import sys
import time
import warnings

sys.dont_write_bytecode = False  # write .pyc files whatever PYTHONDONTWRITEBYTECODE says

TOOLS = ("pytest", "xdist", "playwright.sync_api", "websockets", "networkx", "yaml",
         "streamlit.testing.v1", "streamlit.web.bootstrap", "accelerate", "scipy.stats")
WHOLE = ("streamlit", "plotly", "_plotly_utils", "narwhals", "uvicorn", "starlette", "anyio",
         "websockets", "h11", "itsdangerous", "diskcache", "PIL", "packaging", "playwright",
         "_pytest", "execnet", "markdown_it", "mdurl")
MODEL_DIRS = {"gemma3_text": "gemma3"}  # model_type -> transformers.models.<dir>
MODEL_PARTS = ("modeling", "configuration", "tokenization", "tokenization_fast",
               "image_processing", "image_processing_fast")


def own_modules() -> list[str]:
    """attnviz's own modules, then the tools."""
    import attnviz

    names = [m.name for m in pkgutil.walk_packages(attnviz.__path__, "attnviz.")]
    return names + ["transformers.modeling_gguf_pytorch_utils", "gguf", *TOOLS]


def family_modules() -> list[str]:
    """The transformers modules of the families the engine reads."""
    from attnviz.engine.kinds import MODEL_TYPES

    dirs = [MODEL_DIRS.get(model_type, model_type) for model_type in MODEL_TYPES]
    return [f"transformers.models.{d}.{part}_{d}" for d in dirs for part in MODEL_PARTS]


def import_all(names: list[str]) -> tuple[int, int]:
    """Import `names` (their bytecode kept): (imported, not present)."""
    done = absent = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. Streamlit's "no runtime" outside a server
        for name in names:
            if name.endswith("__main__"):
                continue  # `python -m attnviz` runs the command line
            try:
                importlib.import_module(name)
                done += 1
            except ModuleNotFoundError:  # a family without a fast tokenizer, a tool not
                absent += 1  # installed
            except Exception as e:  # noqa: BLE001 - it is compiled when first imported
                print(f"compile_used: {name} not imported ({type(e).__name__}: {e})")
    return done, absent


def main(argv: list[str]) -> int:
    """The families' modules in a second process beside attnviz's own (importing is one
    core's work), then every module of WHOLE with compileall on every core."""
    if argv == ["--families"]:
        import_all(family_modules())
        return 0
    t0 = time.perf_counter()
    families = subprocess.Popen([sys.executable, __file__, "--families"])
    done, absent = import_all(own_modules())
    families.wait()
    import compileall
    from pathlib import Path

    for name in WHOLE:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            for folder in spec.submodule_search_locations:
                compileall.compile_dir(Path(folder), quiet=1, workers=0)
    print(f"compile_used: {done} imports ({absent} not present) and the families' modules in "
          f"a second process, {len(sys.modules)} modules loaded here and their bytecode "
          f"kept, and every module of {len(WHOLE)} packages, in "
          f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
