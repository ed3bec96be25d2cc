"""safetensors.flax's module name: the same verbs as :mod:`hurray.jax`."""

from .jax import load, load_file, save, save_file

__all__ = ["save", "save_file", "load", "load_file"]
