"""The tests of gates/infra/: tests/infra/test_<module>.py holds the tests of gates/infra/<module>.py."""
