"""pytest --nbmake book/...: the source notebooks hold every solution, so
their checks run strict (a check that rejects a solution fails the run
instead of printing a ✗). Reader notebooks, assignments and Colab run
lenient, the default inside a kernel (beforeqkv.checks.mode)."""
import os

from beforeqkv._kernel_client import guard

os.environ["BEFOREQKV_CHECKS"] = "strict"
guard()  # a kernel reply is read when it arrives (the module says why)
