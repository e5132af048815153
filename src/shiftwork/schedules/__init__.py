"""Schedules: cron, the definition and its policies, the pure planner, the book of
actions people take on schedules, run-time schedules and the leader-only scheduler."""
