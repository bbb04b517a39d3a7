"""Conversations: not built yet.

This package is reserved for the conversations model of the specification; it exports nothing
so far.
"""
