import os
from typing import Any, Iterable, Optional, Union

def parameter_index(
    path: Union[str, os.PathLike[str]],
    names: Optional[Iterable[str]] = None,
    *,
    index: Any = None,
) -> Any: ...
