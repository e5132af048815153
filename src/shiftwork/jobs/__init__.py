"""Jobs: tasks, the requests that enqueue them, handles and result waiting, the
running job's context, checkpoints, effect keys, tags, filters and bulk actions."""
