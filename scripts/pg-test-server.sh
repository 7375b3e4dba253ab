#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests and the storage bench: a fresh cluster in a temp dir, listening on a
# free loopback port, password (SCRAM) auth over TCP. PostgreSQL refuses to run as root, so as root the server runs
# as `nobody`.
#
#   pg-test-server.sh start          make and start a cluster; prints `export NOETIC_TEST_POSTGRES_URL=...` and
#                                    `export NOETIC_TEST_POSTGRES_DIR=...` (eval it); exit 3 when PostgreSQL is not
#                                    installed, 1 when it is and could not start. With openssl, the server also
#                                    takes TLS, its certificate (for the name `localhost` only) signed by a CA of
#                                    its own: `export NOETIC_TEST_POSTGRES_CA=<the CA's PEM file>`
#   pg-test-server.sh stop DIR       stop the server, keep its data (for tests of a server that goes away)
#   pg-test-server.sh resume DIR     start it again, same port and data
#   pg-test-server.sh destroy DIR    stop it and delete everything
#   pg-test-server.sh has-binaries   exit 0 when PostgreSQL's server programs are installed
#   pg-test-server.sh bindir         print where they are
set -euo pipefail

USER_NAME=noetic
PASSWORD=noetic-test

die() { echo "pg-test-server: $*" >&2; exit 1; }

bindir() {
  local dir
  if [[ -n "${PG_BINDIR:-}" && -x "$PG_BINDIR/initdb" ]]; then echo "$PG_BINDIR"; return; fi
  if command -v pg_config >/dev/null && dir=$(pg_config --bindir 2>/dev/null) && [[ -x "$dir/initdb" ]]; then echo "$dir"; return; fi
  if dir=$(command -v initdb) && [[ -x "$(dirname "$dir")/pg_ctl" ]]; then dirname "$dir"; return; fi
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [[ -x "$dir/initdb" ]] && { echo "$dir"; return; }
  done
  return 1
}

# Runs a PostgreSQL program as the cluster's owner: ourselves, or `nobody` when we are root.
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then (cd / && runuser -u nobody -- "$@"); else "$@"; fi
}

port_is_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

url_of() { echo "postgres://$USER_NAME:$PASSWORD@127.0.0.1:$(cat "$1/port")/postgres"; }

# A CA of the server's own and a certificate it signed for the name `localhost` (not for 127.0.0.1, so that the
# tests can tell checking the chain from checking the name).
make_certificates() {
  local dir=$1
  openssl req -x509 -newkey rsa:2048 -nodes -days 7 -subj "/CN=noetic test CA" -keyout "$dir/ca.key" -out "$dir/ca.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
  openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$dir/server.key" -out "$dir/server.csr"
  printf 'subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' >"$dir/server.ext"
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 7 \
    -extfile "$dir/server.ext" -out "$dir/server.crt"
  chmod 600 "$dir/server.key"
  chmod 644 "$dir/ca.pem"
  if [[ $(id -u) -eq 0 ]]; then chown nobody "$dir/server.key" "$dir/server.crt"; fi
}

launch() {
  local dir=$1 bin=$2
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -o "-p $(cat "$dir/port")" start >/dev/null
}

start() {
  local bin dir port attempt
  bin=$(bindir) || { echo "pg-test-server: PostgreSQL is not installed (no initdb found; set PG_BINDIR)" >&2; exit 3; }
  dir=$(mktemp -d "${TMPDIR:-/tmp}/noetic-pg.XXXXXX")
  chmod 755 "$dir"
  echo "$PASSWORD" >"$dir/password"
  [[ $(id -u) -eq 0 ]] && chown -R nobody "$dir"
  as_owner "$bin/initdb" -D "$dir/data" -U "$USER_NAME" --pwfile="$dir/password" --auth-local=trust \
    --auth-host=scram-sha-256 -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; rm -rf "$dir"; die "initdb failed"; }
  cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 300
EOF
  local tls=""
  if command -v openssl >/dev/null && make_certificates "$dir" >"$dir/openssl.log" 2>&1; then
    tls=yes
    cat >>"$dir/data/postgresql.conf" <<EOF
ssl = on
ssl_cert_file = '$dir/server.crt'
ssl_key_file = '$dir/server.key'
EOF
  fi
  for attempt in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 40000))
    port_is_free "$port" || continue
    echo "$port" >"$dir/port"
    if launch "$dir" "$bin"; then
      echo "export NOETIC_TEST_POSTGRES_URL=$(url_of "$dir")"
      echo "export NOETIC_TEST_POSTGRES_DIR=$dir"
      [[ -n "$tls" ]] && echo "export NOETIC_TEST_POSTGRES_CA=$dir/ca.pem"
      return
    fi
  done
  cat "$dir/server.log" >&2 || true
  rm -rf "$dir"
  die "the server did not start"
}

stop() {
  local dir=${1:?stop needs the server dir} bin
  bin=$(bindir) || die "PostgreSQL is not installed"
  as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null
}

resume() {
  local dir=${1:?resume needs the server dir} bin
  bin=$(bindir) || die "PostgreSQL is not installed"
  launch "$dir" "$bin"
}

destroy() {
  local dir=${1:?destroy needs the server dir}
  [[ -f "$dir/port" ]] || die "$dir is not a server made by this script"
  stop "$dir" 2>/dev/null || true
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) stop "${2:-}" ;;
  resume) resume "${2:-}" ;;
  destroy) destroy "${2:-}" ;;
  has-binaries) bindir >/dev/null ;;
  bindir) bindir ;;
  *) die "usage: $0 start | stop DIR | resume DIR | destroy DIR | has-binaries | bindir" ;;
esac
