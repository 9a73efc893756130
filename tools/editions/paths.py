"""Where the book's files are: the repository root (``tools/editions/`` is two levels below it)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if not (ROOT / "_toc.yml").is_file():  # installed as a copy, away from the book
    raise ImportError(f"editions is not inside the book's repository ({ROOT} has no _toc.yml): "
                      "install it editable, from the repository root: pip install -e ./tools")
