"""Helpers shared by every layer of agentkit: async helpers, lazy exports, JSON Schema
checks, input reading and stop signals. Private: nothing here is public API."""
