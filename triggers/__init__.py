"""Delivery parsing, signature, JSON, envelope and trigger matching: pure, no I/O."""
