"""Test doubles only tests use (a stand-in local model server); the scripted model server
that benchmarks share too is in `testkit/`."""
