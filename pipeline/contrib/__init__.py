"""Integrations with frameworks, each importing its framework only when used."""
