"""An independent Python reader for Hurray tensor files.

Built only on the flatc-generated module (``hurray_generated``), the
generated element-type table (``element_types``), the ``flatbuffers``
package and NumPy: no Rust inside. It verifies a file as the reference
reader does (prefix, footer, FlatBuffers structure, the semantic rules) and
reports failures as :class:`HurrayError` with the same variant names.

    import hurray_reader
    f = hurray_reader.open("model.hurray")
    w = f["w"].numpy()          # zero-copy, read-only view for NumPy dtypes
    f.validate()                # also check sparse index data
"""

from .errors import HurrayError
from .reader import File, Tensor, from_bytes, open

__all__ = ["File", "HurrayError", "Tensor", "from_bytes", "open"]
