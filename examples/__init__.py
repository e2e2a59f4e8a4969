"""Readable example scripts (installed as ``numgrad.examples``)."""
