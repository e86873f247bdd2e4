"""Identity: one namespace per remote URL, stable content-addressed node ids."""

from __future__ import annotations

import pytest

from nexusmem import identity


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Acme/Widget.git",
        "https://github.com/acme/widget",
        "https://user:pw@github.com/acme/widget.git/",
        "ssh://git@github.com/acme/widget.git",
        "ssh://git@github.com:22/acme/widget",
        "git://github.com/Acme/widget/",
    ],
)
def test_normalise_url_gives_one_namespace(url: str) -> None:
    assert identity.normalise_url(url) == "github.com/acme/widget"


def test_node_id_is_stable_and_24_hex() -> None:
    a = identity.node_id("p", "git_commit", "abc")
    assert a == identity.node_id("p", "git_commit", "abc") and len(a) == 24
    assert a != identity.node_id("p", "code_diff", "abc") != identity.node_id("q", "git_commit", "abc")
