"""Where a run trains: the container runner, Docker daemons, image builds, tying jobs to the
workflow, the outdir lock."""
