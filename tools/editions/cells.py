"""What every edition does to a notebook's cells the same way."""
from __future__ import annotations

__all__ = ["clear_outputs", "unfold"]


def clear_outputs(cell) -> None:
    """No outputs and no execution count (a markdown cell has neither and is left as it is):
    a notebook an edition writes never shows the results of a run it did not make."""
    if cell.get("cell_type") == "code":
        cell["outputs"], cell["execution_count"] = [], None


def unfold(cell, outputs: bool = False) -> None:
    """The cell is shown open: the site's folding tags (``hide-cell``, ``hide-input``, and
    ``hide-output`` with ``outputs``) go, and the tags list with them when nothing is left."""
    folds = ("hide-cell", "hide-input") + (("hide-output",) if outputs else ())
    tags = [t for t in cell.metadata.pop("tags", []) if t not in folds]
    if tags:
        cell.metadata["tags"] = tags
