"""`hookspawn check`'s account of which agents share a setup snapshot."""
