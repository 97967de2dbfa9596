"""What a configuration asks for, resolved and checked before any job: the schema, the plan,
bounds, run and figures specs, output paths, code hashes."""
