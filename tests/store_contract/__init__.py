"""The store's contract, method by method, on both engines, through the ``Store`` protocol.

The behavioural suite (tests/test_*.py) drives the store through the App and workers;
here each public method of ``shiftwork.store.base.Store`` is called directly, with a fake
clock, and its promises checked: return values, fencing by attempt, the states it
accepts, what it must leave alone, and empty inputs.
"""
