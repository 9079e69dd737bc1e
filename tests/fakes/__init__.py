"""Test doubles: the scripted model server and friends."""
