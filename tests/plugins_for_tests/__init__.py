"""Importable plugin modules used by the tests, as a third-party package would ship them."""
