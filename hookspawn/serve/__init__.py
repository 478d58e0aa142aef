"""`hookspawn serve` and what it starts: the supervising process, the embedded Redis, the demo, the
banner's notices and the checks before anything starts."""
