"""Cutting text: the ASCII shortcut must cut exactly where the cluster walk does."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from handrail.asks.text import ELLIPSIS, _ascii_head, _cluster_head, cut_text, utf16_len

ASCII = st.text(alphabet=st.sampled_from(list("ab \r\n\t.-")) | st.characters(max_codepoint=127))


@given(text=ASCII, budget=st.integers(min_value=0, max_value=80))
def test_the_ascii_head_is_the_cluster_head(text: str, budget: int) -> None:
    assert _ascii_head(text, budget) == _cluster_head(text, budget)


@given(text=st.text(), max_length=st.integers(min_value=2, max_value=80))
def test_cut_text_stays_within_the_limit(text: str, max_length: int) -> None:
    cut = cut_text(text, max_length)
    assert utf16_len(cut) <= max_length
    if utf16_len(text) <= max_length:
        assert cut == text
    else:
        assert cut.endswith(ELLIPSIS)
        assert text.startswith(cut.removesuffix(ELLIPSIS).rstrip())


def test_a_cut_never_splits_cr_lf() -> None:
    assert _ascii_head("ab\r\ncd", 3) == "ab"
    assert _cluster_head("ab\r\ncd", 3) == "ab"
    assert cut_text("abcd\r\nefghij", 6) == "abcd…"
