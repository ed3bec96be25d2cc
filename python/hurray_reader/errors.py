"""The reader's one exception type.

Every failure carries the name of the Rust ``hurray::Error`` variant that the
reference reader reports for the same input (``variant``), and, where the
failure concerns one, the tensor and the field at fault. The compliance
vectors name the error each invalid file must produce in exactly these terms.
"""

from typing import Optional


class HurrayError(Exception):
    """A Hurray file (or a view of one of its tensors) is invalid or unsupported."""

    def __init__(
        self,
        variant: str,
        message: str,
        tensor: Optional[str] = None,
        field: Optional[str] = None,
        with_: Optional[tuple] = None,
    ):
        super().__init__(f"{variant}: {message}")
        self.variant = variant
        self.message = message
        self.tensor = tensor
        self.field = field
        # For BuffersOverlap: (tensor, field) of the other buffer of the pair.
        self.with_ = with_

    def describe(self) -> dict:
        """The error as the vectors' JSON expectations spell it (stage aside)."""
        d = {"variant": self.variant, "tensor": self.tensor, "field": self.field}
        if self.with_ is not None:
            d["with"] = {"tensor": self.with_[0], "field": self.with_[1]}
        return d
