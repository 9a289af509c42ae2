"""The tests of gates/domain/: tests/domain/test_<module>.py holds the tests of gates/domain/<module>.py."""
