"""The webhook intake route and the write-coalesced record scripts it sends."""
