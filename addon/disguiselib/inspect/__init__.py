"""Inspection: what is kept of each flow (record.py), the Inspector addon, the
contentviews, flow files, the audit and the readable SSE view."""
