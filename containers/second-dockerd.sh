#!/usr/bin/env bash
# A second Docker daemon on this machine, standing in for another machine's daemon (a GPU VM,
# a lab server) so that a target's docker_host can be tried and tested without one:
#
#   bash containers/second-dockerd.sh start [PORT]   # answers at tcp://127.0.0.1:PORT (23750)
#   bash containers/second-dockerd.sh stop
#
# Everything of its own: --data-root, --exec-root (its containerd too), --pidfile, a unix
# socket, its identity key (otherwise the daemon ID derives from /etc/docker/key.json, the
# same as the first daemon's: deprecated-key-path in its own --config-file), and a bridge
# ($DOCKERD2_BRIDGE, default ebdocker2 with $DOCKERD2_GATEWAY 172.31.250.1/24) instead of
# docker0, with iptables left to the first daemon (training containers need no network).
# Stopping it removes its containers, its bridge and its data. Needs root and docker.io
# (containers/start-dockerd.sh installs it). State: $DOCKERD2_ROOT.
#
# TCP without TLS: only ever on 127.0.0.1. With DOCKERD2_TLS=DIR (ca.pem, server-cert.pem,
# server-key.pem) it runs with --tlsverify: only clients with a certificate signed by that CA
# get in, as a daemon on another machine should be set up; then DOCKERD2_LISTEN may name other
# addresses of this machine to listen on as well (e.g. "127.0.0.1 172.31.251.1", the gateway
# of its bridge: an address that is not a loopback one, as another machine's would be).
set -euo pipefail
ROOT=${DOCKERD2_ROOT:-/tmp/embryo-bench-dockerd2}
PORT=${2:-${DOCKERD2_PORT:-23750}}
BRIDGE=${DOCKERD2_BRIDGE:-ebdocker2}
GATEWAY=${DOCKERD2_GATEWAY:-172.31.250.1/24}
TLS=${DOCKERD2_TLS:-}
LISTEN=${DOCKERD2_LISTEN:-127.0.0.1}
SOCKET=unix://$ROOT/docker.sock

if [ -z "$TLS" ] && [ "$LISTEN" != 127.0.0.1 ]; then
  echo "DOCKERD2_LISTEN=$LISTEN without DOCKERD2_TLS: plain TCP only ever on 127.0.0.1" >&2
  exit 2
fi
HOSTS=(--host "$SOCKET")
ADDRESSES=""
for ip in $LISTEN; do
  HOSTS+=(--host "tcp://$ip:$PORT")
  ADDRESSES="$ADDRESSES tcp://$ip:$PORT"
done
if [ -n "$TLS" ]; then
  HOSTS+=(--tlsverify --tlscacert "$TLS/ca.pem" --tlscert "$TLS/server-cert.pem" --tlskey "$TLS/server-key.pem")
  ADDRESSES="$ADDRESSES (TLS, --tlsverify)"
fi

# Asked through its own socket (its TCP addresses may want a client certificate).
answers() { docker -H "$SOCKET" info >/dev/null 2>&1; }
# Alive and not a zombie (where PID 1 does not reap, a killed daemon stays one).
alive() { ps -o stat= -p "$1" 2>/dev/null | grep -qv '^Z'; }

start() {
  command -v dockerd >/dev/null || {
    echo "dockerd not found: run containers/start-dockerd.sh first (apt-get install docker.io)" >&2
    exit 1
  }
  if answers; then
    echo "a daemon already answers at $SOCKET"
    return 0
  fi
  mkdir -p "$ROOT"/data "$ROOT"/exec
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add name "$BRIDGE" type bridge
    ip addr add "$GATEWAY" dev "$BRIDGE"
  fi
  ip link set "$BRIDGE" up
  echo "{\"deprecated-key-path\": \"$ROOT/key.json\"}" >"$ROOT/daemon.json"
  nohup dockerd --data-root "$ROOT/data" --exec-root "$ROOT/exec" \
    --pidfile "$ROOT/dockerd.pid" --config-file "$ROOT/daemon.json" "${HOSTS[@]}" \
    --bridge "$BRIDGE" --iptables=false --ip-masq=false --cgroup-parent "embryo-bench-$BRIDGE" \
    >"$ROOT/dockerd.log" 2>&1 &
  for _ in $(seq 1 60); do
    if answers; then
      docker -H "$SOCKET" info --format \
        "second dockerd {{.ServerVersion}} up at$ADDRESSES: ID {{.ID}}, {{.Driver}}, {{.NCPU}} CPUs"
      return 0
    fi
    sleep 1
  done
  echo "the second dockerd did not answer at $SOCKET within 60 s; its log:" >&2
  tail -n 40 "$ROOT/dockerd.log" >&2
  return 1
}

stop() {
  if [ -s "$ROOT/dockerd.pid" ]; then
    local pid
    pid=$(cat "$ROOT/dockerd.pid")
    if alive "$pid"; then
      docker -H "$SOCKET" ps -aq | xargs -r docker -H "$SOCKET" rm -f >/dev/null || true
      kill "$pid"
      for _ in $(seq 1 60); do
        alive "$pid" || break
        sleep 0.5
      done
    fi
  fi
  ip link del "$BRIDGE" 2>/dev/null || true
  # Its overlay mounts are gone with the daemon; then its data can go.
  grep -o " $ROOT/[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  rm -rf "$ROOT"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start [PORT] | stop" >&2; exit 2 ;;
esac
