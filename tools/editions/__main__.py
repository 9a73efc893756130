"""``python -m editions``: what each tool of the package makes, and how to run it."""
import sys

from . import __doc__ as GUIDE

if __name__ == "__main__":
    print(GUIDE.strip())
    print("\nRun one with its make target, or as python -m editions.<tool> (its usage: the top of its docstring).")
    sys.exit(0)
