"""Screenshots of the notebook views as a reader without their ``<style>`` blocks and
scripts sees them (an untrusted notebook in JupyterLab, a GitHub-like renderer), light
and dark, beside the same outputs with the block kept.

    python benchmarks/sanitized_screenshots.py [OUT_DIR]

Writes ``views-stripped-light.png``, ``views-stripped-dark.png`` and
``views-full-dark.png`` (JupyterLab's dark layout and text colours on ``body``) and
``jaxpr-pinned-dark.png`` to OUT_DIR (default ``benchmarks/screenshots``), from
headless Chromium (``CHROMIUM``, default ``chromium`` on PATH).
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import re
import shutil
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxscope as js

STRIP = re.compile(r"<(style|script)\b[^>]*>.*?</\1\s*>", re.S | re.I)
THEMES = {
    "light": "background:#ffffff;color:rgba(0,0,0,.87)",
    "dark": "background:#111111;color:rgba(255,255,255,.87)",
}


def mlp(params, x):
    h = jnp.tanh(x @ params["w1"])
    return jnp.sum(h @ params["w2"])


def views() -> dict[str, str]:
    params = {"w1": jnp.ones((8, 16)) / 8, "w2": jnp.ones((16, 4)) / 16}
    x = jnp.ones((4, 8))
    auto = jax.sharding.AxisType.Auto
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(auto, auto))
    a = jax.device_put(
        jnp.arange(64.0).reshape(8, 8), NamedSharding(mesh, P("data", "model"))
    )
    b = jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P("model", None)))
    shown = {
        "%jaxpr": js.jaxpr(mlp)(params, x),
        "%hlo": js.hlo(mlp)(params, x),
        "%sharding": js.sharding(a),
        "%sharding (tree)": js.sharding({"a": a, "b": b}),
        "%jaxprofile": js.profile(jax.jit(mlp), repeat=1)(params, x),
        "%jaxmem": js.memory(jax.jit(mlp))(params, x),
    }
    return {k: v._repr_mimebundle_()["text/html"] for k, v in shown.items()}


def page(outputs: dict[str, str], theme: str, *, strip: bool) -> str:
    cells = "".join(
        f"<div style='margin:14px 0 4px;font:bold 12px sans-serif'>{name}</div>"
        + (STRIP.sub("", html) if strip else html)
        for name, html in outputs.items()
    )
    return (
        "<!doctype html><html><body style='font-family:sans-serif;"
        f"{THEMES[theme]};margin:16px;width:1000px'>{cells}</body></html>"
    )


def main() -> None:
    out = Path(
        sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "screenshots"
    )
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    outputs = views()
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=os.environ.get("CHROMIUM") or shutil.which("chromium")
        )
        for name, theme, strip, scripts in (
            ("views-stripped-light.png", "light", True, False),
            ("views-stripped-dark.png", "dark", True, False),
            ("views-full-dark.png", "dark", False, True),
        ):
            context = browser.new_context(
                java_script_enabled=scripts, viewport={"width": 1040, "height": 800}
            )
            tab = context.new_page()
            tab.set_content(page(outputs, theme, strip=strip))
            tab.screenshot(path=str(out / name), full_page=True)
            context.close()
        tab = browser.new_page(viewport={"width": 1040, "height": 300})
        tab.set_content(page({"%jaxpr": outputs["%jaxpr"]}, "dark", strip=False))
        tab.locator(".jxs-e").nth(1).click()
        tab.mouse.move(1030, 290)
        tab.screenshot(path=str(out / "jaxpr-pinned-dark.png"))
        browser.close()
    print(f"wrote screenshots to {out}")


if __name__ == "__main__":
    main()
