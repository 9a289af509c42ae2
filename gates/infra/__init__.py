"""The doors and the plumbing: git, the disk, the state layout, config, schemas, findings, reports."""
