"""Composition: result handles, groups with a callback, chains and graphs."""
