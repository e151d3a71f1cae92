"""%jaxprobe: the probe view from a magic; bad input is one line."""

from __future__ import annotations

import jax.numpy as jnp
import pytest
from IPython.core.error import UsageError

import jaxscope as js


def model(x):
    logits = jnp.tanh(x) * 3.0
    return logits.sum()


def test_jaxprobe_returns_the_view_by_the_users_names(ip):
    ip.user_ns.update(model=model, x=jnp.ones(4))
    view = ip.run_line_magic("jaxprobe", "--at logits model(x)")
    assert isinstance(view, js.ProbeView)
    assert view.keys() == ["logits"]
    assert view.info["logits"].summary.shape == (4,)


def test_jaxprobe_without_at_or_with_a_bad_name_is_one_line(ip):
    ip.user_ns.update(model=model, x=jnp.ones(4))
    with pytest.raises(UsageError, match="needs at least one --at"):
        ip.run_line_magic("jaxprobe", "model(x)")
    with pytest.raises(UsageError, match="nearest: logits"):
        ip.run_line_magic("jaxprobe", "--at logit model(x)")


def test_jaxprobe_takes_names_separated_by_commas_as_the_error_lists_them(ip):
    def loss_fn(x):
        logits = jnp.tanh(x) * 3.0
        loss = (logits**2).mean()
        return loss

    ip.user_ns.update(loss_fn=loss_fn, x=jnp.ones(4))
    view = ip.run_line_magic("jaxprobe", "--at logits,loss loss_fn(x)")
    assert view.keys() == ["logits", "loss"]
    view = ip.run_line_magic("jaxprobe", "--at logits, --at loss loss_fn(x)")
    assert view.keys() == ["logits", "loss"]
