#!/usr/bin/env bash
# Installs the Redis server the Redis replay tests start (Debian's redis-server), when it is missing.
# The tests start their own server on 127.0.0.1 with a random port and password, and stop it after.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1; then exit 0; fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
# Debian's package may start a system instance on 6379; relayrl's tests never use it.
