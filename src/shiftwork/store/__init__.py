"""Storage: one small interface, one implementation per engine, SQL beside each engine."""

from .base import Store
from .open import open_store

__all__ = ["Store", "open_store"]
