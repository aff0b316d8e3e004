"""Dialect encoders: the only modules that know field numbers."""

from .base import DialectEncoder

__all__ = ["DialectEncoder"]
