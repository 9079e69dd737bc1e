"""Memory that survives compaction: decision log, snapshots, wake-up digest (see README.md)."""
