"""The hand-over model and the facts the gates and commands share: no argument parsing, no gate."""
