"""Per-API request policies and stream transformers."""
