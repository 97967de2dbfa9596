"""What a run records and the machine it ran on: metrics, telemetry, probes, baselines,
provenance."""
