"""Analysis shared by every rule, built in one pass over a module."""
