#!/usr/bin/env bash
# Start a local Docker daemon for the docker targets (CI and hosts with only the client):
# installs Debian's docker.io and debootstrap if missing, starts dockerd in the background
# (log: /tmp/embryo-bench-dockerd.log) and waits until it answers. Needs root.
set -euo pipefail
if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap >/dev/null
fi
if docker info >/dev/null 2>&1; then
  echo "dockerd already answers"; exit 0
fi
nohup dockerd >/tmp/embryo-bench-dockerd.log 2>&1 &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    docker info --format 'dockerd {{.ServerVersion}} up: {{.Driver}}, cgroup v{{.CgroupVersion}}, {{.NCPU}} CPUs'
    exit 0
  fi
  sleep 1
done
echo "dockerd did not answer within 60 s; its log:" >&2
tail -n 40 /tmp/embryo-bench-dockerd.log >&2
exit 1
