import pytest

from beforeqkv.attention import MultiHeadAttention
from beforeqkv.listing import show_source


def test_show_source_gives_the_package_code_as_text_and_wrapped_html():
    listing = show_source(MultiHeadAttention)
    assert str(listing).startswith("class MultiHeadAttention")
    assert "def forward" in str(listing)
    page = listing._repr_html_()
    assert "pre-wrap" in page and "beforeqkv.attention.MultiHeadAttention" in page
    assert "MultiHeadAttention" in repr(listing)


def test_show_source_from_a_line():
    listing = show_source(MultiHeadAttention, start="def forward")
    assert str(listing).startswith("def forward")


@pytest.mark.parametrize("obj, start", [(len, None), (MultiHeadAttention, "no such text")])
def test_show_source_bad_input_is_a_value_error(obj, start):
    with pytest.raises(ValueError, match="show_source"):
        show_source(obj, start=start)


def test_show_source_names_the_package_file_of_a_decorated_function():
    from beforeqkv import models
    listing = show_source(models.handwritten_memory)  # wrapped by @torch.no_grad()
    assert "def handwritten_memory(" in listing.code
    assert listing.where.endswith("(beforeqkv/models/memory.py)"), listing.where
