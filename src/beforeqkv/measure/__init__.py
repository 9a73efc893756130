"""The chapters' measurements: what the experiments count, time and probe (not models).

* :mod:`.steps` (chapter 3): sequential depth of a computation, the step at which each
  unit can run, forward+backward wall time.
* :mod:`.probes` (chapter 6): ring accuracy and where each head reads.
* :mod:`.saturation` (chapter 7): softmax saturation and the gradient left at width d.
"""
from . import probes, saturation, steps  # noqa: F401
