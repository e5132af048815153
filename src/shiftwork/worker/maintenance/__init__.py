"""Leader-only and fleet-wide upkeep: the leader lease, the rescuer of expired
leases and the pruner (all retention)."""
