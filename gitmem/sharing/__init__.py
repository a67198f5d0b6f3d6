"""Sharing memories with teammates: record-level sync and the credential scan before a push."""
