"""The demo workspace: seed 000's finance case, served by `baton demo`."""
