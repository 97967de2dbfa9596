"""What every stage shares, at the bottom of the package's layers: the run and figures specs,
the file layout and formats, round checks, the configuration's schema and reading, units,
code hashes."""
