"""Screens: browse (the main one), wake preview, and the refute / confirm / confidence modals."""
