"""Rooms: not built yet.

This package is reserved for the rooms model of the specification; it exports nothing
so far.
"""
