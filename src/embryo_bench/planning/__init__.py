"""What a configuration asks for, resolved and checked before any job, at the top of the
package's layers (only the commands above it): the plan, the rounds' decision, bounds, the
workloads resolved, the configuration's README."""
