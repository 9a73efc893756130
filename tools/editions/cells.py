"""What every edition does to a notebook's cells the same way."""
from __future__ import annotations

__all__ = ["clear_outputs"]


def clear_outputs(cell) -> None:
    """No outputs and no execution count (a markdown cell has neither and is left as it is):
    a notebook an edition writes never shows the results of a run it did not make."""
    if cell.get("cell_type") == "code":
        cell["outputs"], cell["execution_count"] = [], None
