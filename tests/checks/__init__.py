"""The tests of gates/checks/: tests/checks/test_<module>.py holds the tests of gates/checks/<module>.py."""
