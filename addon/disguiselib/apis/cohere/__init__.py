"""Cohere's v2 Chat API."""
