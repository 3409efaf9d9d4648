"""What builds the documentation site beyond mkdocs itself."""
