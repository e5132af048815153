"""The values that cross the storage seam, with no I/O: a job to insert (``NewJob``),
an attempt's outcome, the jobs filter and tags, the items figures, and every record the
store returns. Below the store, so that the store and every component above it share them."""
