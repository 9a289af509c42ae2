"""The tests of gates/commands/: tests/commands/test_<module>.py holds the tests of gates/commands/<module>.py."""
