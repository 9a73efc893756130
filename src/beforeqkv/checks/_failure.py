"""The exception a checker raises: a leaf module, so the recorder and the checkers share it
without importing each other."""


class CheckFailure(AssertionError):
    """Raised by a checker when the reader's answer is wrong; the message says why."""
