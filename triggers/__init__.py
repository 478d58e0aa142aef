"""HTTP side: webhook intake, signature, envelope, trigger matching."""
