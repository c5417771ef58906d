"""Test data: hostile inputs (issue 8)."""
