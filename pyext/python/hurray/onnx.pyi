import os
from typing import Any, Dict, Optional, Union

def externalize(
    model_or_path: Any,
    out_onnx_path: Union[str, os.PathLike[str]],
    weights_path: Union[str, os.PathLike[str]],
    align: Optional[int] = None,
    threshold: int = 1024,
    *,
    existing: bool = False,
    base_dir: Union[str, os.PathLike[str], None] = None,
) -> Dict[str, Any]: ...
def write_weights(
    model_or_path: Any,
    weights_path: Union[str, os.PathLike[str]],
    align: int = 64,
    *,
    base_dir: Union[str, os.PathLike[str], None] = None,
) -> None: ...
