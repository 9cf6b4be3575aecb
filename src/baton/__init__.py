"""Baton."""
