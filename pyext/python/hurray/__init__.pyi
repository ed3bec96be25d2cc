"""Type stubs of the ``hurray`` package."""

import os
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from . import flax as flax
from . import jax as jax
from . import numpy as numpy
from . import torch as torch
from ._hurray import ChecksumError as ChecksumError
from ._hurray import File as File
from ._hurray import HurrayError as HurrayError
from ._hurray import MemberMismatchError as MemberMismatchError
from ._hurray import SignatureError as SignatureError
from ._hurray import ShardedFile as ShardedFile
from ._hurray import ShardedTensor as ShardedTensor
from ._hurray import StoredBits as StoredBits
from ._hurray import Tensor as Tensor
from ._hurray import __version__ as __version__
from ._hurray import open as open
from ._hurray import open_bytes as open_bytes
from ._hurray import open_sharded as open_sharded
from ._hurray import open_sharded_remote as open_sharded_remote
from ._safe_open import TensorSlice as TensorSlice
from ._safe_open import safe_open as safe_open
from ._sharded import ShardedWriter as ShardedWriter
from ._sharded import save_sharded as save_sharded

def save(
    path: Union[str, os.PathLike],
    tensors: Mapping[str, Any],
    metadata: Optional[Dict[str, str]] = None,
    *,
    durable: bool = True,
    checksums: bool = True,
    digests: bool = False,
) -> None: ...
def sign(
    path: Union[str, os.PathLike],
    private_key: Union[str, os.PathLike, bytes],
    output: Optional[Union[str, os.PathLike]] = None,
) -> str:
    """Signs a file (or index) written with digests; writes and returns ``path + ".sig"``."""
def verify(
    path: Union[str, os.PathLike],
    public_key: Union[str, os.PathLike, bytes],
    *,
    signature: Optional[Union[str, os.PathLike]] = None,
    storage_options: Optional[Dict[str, str]] = None,
) -> Tuple[int, int]:
    """The signature, every member's header and every digest; returns (files, tensors)."""
