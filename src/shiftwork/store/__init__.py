"""Storage: one small interface, one implementation per engine, SQL beside each engine."""

from shiftwork.store.base import Store
from shiftwork.store.open import open_store

__all__ = ["Store", "open_store"]
