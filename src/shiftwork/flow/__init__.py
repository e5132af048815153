"""Flow control declared on tasks and queues: rate limits, concurrency and groups."""
