"""Readable example scripts; examples/ at the top of the repository links to them."""
