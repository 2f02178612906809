#!/usr/bin/env bash
# testbed.sh: a multi-host SSH testbed on one Linux machine, built from network
# namespaces. Needs root, iproute2 and openssh-server/-client.
#
#   testbed.sh up N STATE_DIR          create hosts h1..hN (any old testbed in STATE_DIR is torn down first)
#   testbed.sh down STATE_DIR          remove everything `up` created (idempotent, safe after a failed up)
#   testbed.sh cut HOST [STATE_DIR]    take HOST's link to the coordinator down (both veth ends)
#   testbed.sh restore HOST [STATE_DIR]  bring it back up
#   testbed.sh link A B [STATE_DIR]    give hosts A and B a direct veth so they reach each other
#   testbed.sh unlink A B [STATE_DIR]  remove that link again
#   testbed.sh status [STATE_DIR]      print what is recorded and whether it is still there
#
# STATE_DIR defaults to $FERRY_TESTBED for every command but `up`.
#
# Layout. Each testbed takes one /24 out of 198.18.0.0/15 (chosen from a hash of the
# state dir's path, probing onward when another testbed holds it); host K (1-based)
# gets the /30 at offset 4*(K-1): coordinator side .4(K-1)+1, host side .4(K-1)+2.
# Names carry a prefix "fy" + 6 hex of that hash, so testbeds from different state
# dirs never clash: namespace <prefix>-hK, veths <prefix>hKc (coordinator end) and
# <prefix>hKp (host end), host links <prefix>L<a>x<b>.
#
# Isolation. Hosts route 198.18.0.0/15 (and nothing else) via the coordinator, and
# forwarding is switched off on every coordinator-side veth, so a host reaches the
# coordinator but never another host (the kernel drops and answers "host
# unreachable"). `link A B` adds a direct veth between the two namespaces with /32
# routes, leaving the coordinator non-forwarding.
#
# Ownership. Every namespace, veth and pid is appended to STATE_DIR/resources
# *before* it is created, so `down` removes exactly what `up` made, even when `up`
# died halfway. Processes are ended by pid: the recorded sshd first, then every pid
# left inside our own namespaces (sshd's session children, commands run over ssh).
set -euo pipefail

readonly NET_SUPERNET="198.18.0.0/15"
readonly MAX_HOSTS=64               # one /24 per testbed, a /30 per host
readonly SSHD_READY_TIMEOUT_S=20    # bounded wait for each sshd to accept
readonly KILL_TIMEOUT_S=5           # TERM, then KILL after this long
readonly SSHD=/usr/sbin/sshd

die() { echo "testbed: $*" >&2; exit 1; }
log() { echo "testbed: $*" >&2; }

need_root() { [[ $(id -u) -eq 0 ]] || die "must run as root (network namespaces)"; }

abs_dir() { realpath -m -- "$1"; }

# prefix_for STATE_DIR -> "fy" + 6 hex chars of sha256(abs path)
prefix_for() { printf 'fy%s' "$(printf '%s' "$(abs_dir "$1")" | sha256sum | cut -c1-6)"; }

state_dir_arg() {
  local d="${1:-${FERRY_TESTBED:-}}"
  [[ -n "$d" ]] || die "no state dir given and \$FERRY_TESTBED is not set"
  abs_dir "$d"
}

record() { echo "$*" >>"$STATE/resources"; }

# Monotonic-ish deadline helpers (seconds since the epoch are enough here).
now_ms() { date +%s%3N; }

# wait_port ADDR PORT NS TIMEOUT_S: poll until a TCP connect from the coordinator succeeds.
wait_port() {
  local addr=$1 port=$2 pid=$3 deadline=$(( $(now_ms) + $4 * 1000 ))
  while (( $(now_ms) < deadline )); do
    if timeout 1 bash -c "exec 3<>/dev/tcp/$addr/$port" 2>/dev/null; then return 0; fi
    kill -0 "$pid" 2>/dev/null || return 1   # sshd died: no point waiting
    sleep 0.05
  done
  return 1
}

# is_our_sshd PID: the pid is an sshd started with a config inside $STATE (guards against pid reuse).
is_our_sshd() {
  local pid=$1 cmd
  [[ -r /proc/$pid/cmdline ]] || return 1
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  [[ "$cmd" == *sshd* && "$cmd" == *"$STATE/"* ]]
}

# kill_pids PID...: TERM, wait (bounded), then KILL what is left.
kill_pids() {
  local pids=("$@") p alive deadline
  (( ${#pids[@]} )) || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  deadline=$(( $(now_ms) + KILL_TIMEOUT_S * 1000 ))
  while :; do
    alive=()
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive+=("$p"); done
    (( ${#alive[@]} )) || return 0
    if (( $(now_ms) >= deadline )); then
      kill -KILL "${alive[@]}" 2>/dev/null || true
      return 0
    fi
    sleep 0.05
  done
}

host_index() {
  [[ "$1" =~ ^h([0-9]+)$ ]] || die "bad host name '$1' (want h1..hN)"
  local k=${BASH_REMATCH[1]}
  [[ -f "$STATE/hosts.env" ]] || die "no testbed in $STATE (hosts.env missing)"
  # shellcheck disable=SC1091
  source "$STATE/hosts.env"
  (( k >= 1 && k <= TESTBED_N )) || die "no host $1 in $STATE (has h1..h$TESTBED_N)"
  echo "$k"
}

# Address of host K: host side .4(K-1)+2, coordinator side .4(K-1)+1.
host_addr() { echo "$BLOCK.$(( 4 * ($1 - 1) + 2 ))"; }
coord_addr() { echo "$BLOCK.$(( 4 * ($1 - 1) + 1 ))"; }

# pick_block PREFIX: a free /24 of 198.18.0.0/15, starting at one chosen by the hash.
pick_block() {
  local h start i idx base
  h=$(printf '%s' "$STATE" | sha256sum | cut -c7-10)
  start=$(( 16#$h % 512 ))
  for (( i = 0; i < 512; i++ )); do
    idx=$(( (start + i) % 512 ))
    base="198.$(( 18 + idx / 256 )).$(( idx % 256 ))"
    if ! ip -4 -o addr show | grep -qE " inet ${base//./\\.}\.[0-9]" &&
       ! ip -4 route show table all | grep -qE "(^|[^0-9])${base//./\\.}\.[0-9]"; then
      echo "$base"; return 0
    fi
  done
  die "no free /24 left in $NET_SUPERNET"
}

cmd_up() {
  local n=$1
  [[ "$n" =~ ^[0-9]+$ ]] && (( n >= 1 && n <= MAX_HOSTS )) || die "N must be 1..$MAX_HOSTS"
  STATE=$(abs_dir "$2")
  need_root
  for tool in ip ssh-keygen "$SSHD" sha256sum realpath; do
    command -v "$tool" >/dev/null || die "missing $tool"
  done
  if [[ -f "$STATE/resources" ]]; then
    log "tearing down the old testbed in $STATE first"
    cmd_down "$STATE"
  fi
  mkdir -p "$STATE"
  PREFIX=$(prefix_for "$STATE")
  : >"$STATE/resources"
  record "prefix $PREFIX"
  # If anything below fails, leave no half-built testbed behind.
  trap 'rc=$?; if (( rc != 0 )); then log "up failed (exit $rc); cleaning up"; cmd_down "$STATE" || true; fi' EXIT

  BLOCK=$(pick_block)
  record "block $BLOCK"
  # While a host's link is cut its /30 route is gone; without this its packets would
  # follow the default route off the machine. Dropped silently, like a pulled cable.
  record "blackhole $BLOCK.0/24"
  ip route add blackhole "$BLOCK.0/24"
  mkdir -p /run/sshd   # sshd's privilege-separation directory

  rm -f "$STATE/id_ed25519" "$STATE/id_ed25519.pub"
  ssh-keygen -q -t ed25519 -N "" -C "ferry-testbed-client" -f "$STATE/id_ed25519" </dev/null >/dev/null
  cp "$STATE/id_ed25519.pub" "$STATE/authorized_keys"
  : >"$STATE/known_hosts"

  local k h ns vc vp ha ca hd
  for (( k = 1; k <= n; k++ )); do
    h="h$k"; ns="$PREFIX-$h"; vc="${PREFIX}${h}c"; vp="${PREFIX}${h}p"
    ha=$(host_addr "$k"); ca=$(coord_addr "$k"); hd="$STATE/$h"
    mkdir -p "$hd/work" "$hd/home/.ssh"
    rm -f "$hd/sshd.pid" "$hd/sshd.log"
    # Each host is its own machine with its own home: sshd's SetEnv points HOME there,
    # so logins skip the coordinator machine's shell rc files (pyenv here) and the host's
    # own ssh client (used by copy's direct route) finds this config via $HOME.
    cat >"$hd/home/.ssh/config" <<EOF
# generated by testbed.sh: how $h reaches the other testbed hosts
Host *
  User root
  IdentityFile $STATE/id_ed25519
  UserKnownHostsFile $STATE/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
EOF

    record "netns $ns"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    record "link $vc"
    ip link add "$vc" type veth peer name "$vp"
    ip link set "$vp" netns "$ns"
    sysctl -qw "net.ipv4.conf.$vc.forwarding=0"
    # IPv4 only: no IPv6 link-local addresses outside 198.18.0.0/15.
    sysctl -qw "net.ipv6.conf.$vc.disable_ipv6=1"
    ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$vp.disable_ipv6=1"
    ip addr add "$ca/30" dev "$vc"
    ip link set "$vc" up
    ip -n "$ns" addr add "$ha/30" dev "$vp"
    ip -n "$ns" link set "$vp" up
    ip -n "$ns" route add "$NET_SUPERNET" via "$ca"

    rm -f "$hd/ssh_host_ed25519_key" "$hd/ssh_host_ed25519_key.pub"
    ssh-keygen -q -t ed25519 -N "" -C "ferry-testbed-$h" -f "$hd/ssh_host_ed25519_key" </dev/null >/dev/null
    echo "$ha $(cut -d' ' -f1,2 "$hd/ssh_host_ed25519_key.pub")" >>"$STATE/known_hosts"
    cat >"$hd/sshd_config" <<EOF
# generated by testbed.sh for $h of $STATE
ListenAddress $ha
Port 22
AddressFamily inet
HostKey $hd/ssh_host_ed25519_key
PidFile $hd/sshd.pid
AuthorizedKeysFile $STATE/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
UseDNS no
PrintMotd no
PrintLastLog no
# DEBUG1 so tests can prove what a client did and did not send (e.g. no
# userauth-request before the host key was accepted).
LogLevel DEBUG1
# Reap sessions whose client vanished behind a cut link.
ClientAliveInterval 5
ClientAliveCountMax 3
MaxStartups 100:30:200
MaxSessions 64
Subsystem sftp /usr/lib/openssh/sftp-server
SetEnv HOME=$hd/home
${FERRY_TESTBED_CIPHERS:+# Benchmarks pin one cipher so every client is measured with the same one.
Ciphers $FERRY_TESTBED_CIPHERS}
EOF
    "$SSHD" -t -f "$hd/sshd_config" || die "sshd rejects $hd/sshd_config"
    ip netns exec "$ns" "$SSHD" -D -f "$hd/sshd_config" -E "$hd/sshd.log" </dev/null >/dev/null 2>&1 &
    local pid=$!
    record "pid $pid"
    echo "$pid" >"$hd/sshd.launch_pid"
  done

  for (( k = 1; k <= n; k++ )); do
    local pid; pid=$(cat "$STATE/h$k/sshd.launch_pid")
    wait_port "$(host_addr "$k")" 22 "$pid" "$SSHD_READY_TIMEOUT_S" ||
      die "sshd of h$k did not accept on $(host_addr "$k"):22 within ${SSHD_READY_TIMEOUT_S}s (see $STATE/h$k/sshd.log)"
  done

  write_hosts_files "$n"
  trap - EXIT
  log "up: $n hosts in $STATE ($BLOCK.0/24, prefix $PREFIX)"
}

write_hosts_files() {
  local n=$1 k h ha ca env json sep=""
  env="$STATE/hosts.env"; json="$STATE/hosts.json"
  {
    echo "# generated by testbed.sh; source it from bash"
    echo "TESTBED_STATE_DIR='$STATE'"
    echo "TESTBED_PREFIX='$PREFIX'"
    echo "TESTBED_BLOCK='$BLOCK'"
    echo "TESTBED_N=$n"
    echo "TESTBED_HOSTS='$(for (( k = 1; k <= n; k++ )); do printf 'h%d ' "$k"; done | sed 's/ $//')'"
    echo "TESTBED_USER='root'"
    echo "TESTBED_IDENTITY='$STATE/id_ed25519'"
    echo "TESTBED_KNOWN_HOSTS='$STATE/known_hosts'"
    for (( k = 1; k <= n; k++ )); do
      h="h$k"; ha=$(host_addr "$k"); ca=$(coord_addr "$k")
      echo "H${k}_ADDRESS='$ha'"
      echo "H${k}_COORDINATOR_ADDRESS='$ca'"
      echo "H${k}_PORT=22"
      echo "H${k}_WORKDIR='$STATE/$h/work'"
      echo "H${k}_HOME='$STATE/$h/home'"
      echo "H${k}_NETNS='$PREFIX-$h'"
      echo "H${k}_SSHD_LOG='$STATE/$h/sshd.log'"
      echo "H${k}_SSHD_PID=$(cat "$STATE/$h/sshd.pid" 2>/dev/null || cat "$STATE/$h/sshd.launch_pid")"
    done
  } >"$env.tmp"
  mv "$env.tmp" "$env"
  {
    echo "{"
    echo "  \"state_dir\": \"$STATE\","
    echo "  \"prefix\": \"$PREFIX\","
    echo "  \"user\": \"root\","
    echo "  \"identity\": \"$STATE/id_ed25519\","
    echo "  \"known_hosts\": \"$STATE/known_hosts\","
    echo "  \"hosts\": ["
    for (( k = 1; k <= n; k++ )); do
      h="h$k"; ha=$(host_addr "$k"); ca=$(coord_addr "$k")
      printf '%s    {"name": "%s", "address": "%s", "coordinator_address": "%s", "port": 22, "user": "root",\n' "$sep" "$h" "$ha" "$ca"
      printf '     "workdir": "%s", "home": "%s", "identity": "%s", "known_hosts": "%s",\n' "$STATE/$h/work" "$STATE/$h/home" "$STATE/id_ed25519" "$STATE/known_hosts"
      printf '     "netns": "%s", "veth": "%s", "sshd_log": "%s", "sshd_pid": %s}' "$PREFIX-$h" "${PREFIX}${h}c" "$STATE/$h/sshd.log" \
        "$(cat "$STATE/$h/sshd.pid" 2>/dev/null || cat "$STATE/$h/sshd.launch_pid")"
      sep=$',\n'
    done
    echo ""
    echo "  ]"
    echo "}"
  } >"$json.tmp"
  mv "$json.tmp" "$json"
}

has_blackhole() { ip -4 route show type blackhole | awk '{print $2}' | grep -qxF -- "$1"; }

cmd_down() {
  STATE=$(abs_dir "$1")
  need_root
  local res="$STATE/resources"
  if [[ ! -f "$res" ]]; then log "down: nothing recorded in $STATE"; return 0; fi
  local kind name pids=() nss=() links=() routes=()
  while read -r kind name; do
    case "$kind" in
      pid) pids+=("$name") ;;
      netns) nss+=("$name") ;;
      link) links+=("$name") ;;
      blackhole) routes+=("$name") ;;
    esac
  done <"$res"

  # 1. our sshd listeners, by recorded pid (checked to still be ours).
  local mine=() p
  for p in "${pids[@]}"; do is_our_sshd "$p" && mine+=("$p"); done
  kill_pids "${mine[@]}"
  # 2. whatever still lives inside our namespaces (sshd session children, commands run
  #    over ssh, detached jobs): all of it was started through our sshds.
  local ns inside=()
  for ns in "${nss[@]}"; do
    if ip netns list | awk '{print $1}' | grep -qx -- "$ns"; then
      while read -r p; do [[ -n "$p" ]] && inside+=("$p"); done < <(ip netns pids "$ns" 2>/dev/null || true)
    fi
  done
  kill_pids "${inside[@]}"
  # 3. veths (root side; deleting one end deletes its peer), then namespaces (which
  #    takes any veth end still inside with it).
  for name in "${links[@]}"; do
    ip link show dev "$name" >/dev/null 2>&1 && ip link del dev "$name" 2>/dev/null || true
  done
  for ns in "${nss[@]}"; do
    if ip netns list | awk '{print $1}' | grep -qx -- "$ns"; then ip netns del "$ns" || true; fi
  done
  for name in "${routes[@]}"; do
    has_blackhole "$name" && { ip route del blackhole "$name" 2>/dev/null || true; }
  done
  # 4. verify, then forget.
  local left=""
  for ns in "${nss[@]}"; do ip netns list | awk '{print $1}' | grep -qx -- "$ns" && left+=" netns:$ns"; done
  for name in "${links[@]}"; do ip link show dev "$name" >/dev/null 2>&1 && left+=" link:$name"; done
  for p in "${pids[@]}"; do is_our_sshd "$p" && left+=" pid:$p"; done
  for name in "${routes[@]}"; do has_blackhole "$name" && left+=" blackhole:$name"; done
  [[ -z "$left" ]] || die "down: could not remove:$left"
  rm -f "$res" "$STATE/hosts.env" "$STATE/hosts.json" "$STATE/links"
  log "down: $STATE is clean"
}

load_state() {
  STATE=$(state_dir_arg "${1:-}")
  need_root
  [[ -f "$STATE/hosts.env" ]] || die "no testbed up in $STATE"
  # shellcheck disable=SC1091
  source "$STATE/hosts.env"
  PREFIX=$TESTBED_PREFIX; BLOCK=$TESTBED_BLOCK
}

cmd_cut() {
  load_state "${2:-}"
  local k; k=$(host_index "$1")
  ip link set "${PREFIX}h${k}c" down
  ip -n "$PREFIX-h$k" link set "${PREFIX}h${k}p" down
  log "cut: h$k ($(host_addr "$k")) is off the coordinator"
}

cmd_restore() {
  load_state "${2:-}"
  local k; k=$(host_index "$1")
  ip link set "${PREFIX}h${k}c" up
  ip -n "$PREFIX-h$k" link set "${PREFIX}h${k}p" up
  # Taking the link down flushed the host's route through the coordinator.
  ip -n "$PREFIX-h$k" route replace "$NET_SUPERNET" via "$(coord_addr "$k")"
  log "restore: h$k ($(host_addr "$k")) is back"
}

cmd_link() {
  load_state "${3:-}"
  local a b; a=$(host_index "$1"); b=$(host_index "$2")
  (( a != b )) || die "link: a host is always linked to itself"
  local la="${PREFIX}L${a}x${b}" lb="${PREFIX}L${b}x${a}"
  if ip -n "$PREFIX-h$a" link show dev "$la" >/dev/null 2>&1; then log "link: h$a and h$b already linked"; return 0; fi
  record "link $la"
  ip link add "$la" type veth peer name "$lb"
  ip link set "$la" netns "$PREFIX-h$a"
  ip link set "$lb" netns "$PREFIX-h$b"
  ip netns exec "$PREFIX-h$a" sysctl -qw "net.ipv6.conf.$la.disable_ipv6=1"
  ip netns exec "$PREFIX-h$b" sysctl -qw "net.ipv6.conf.$lb.disable_ipv6=1"
  ip -n "$PREFIX-h$a" link set "$la" up
  ip -n "$PREFIX-h$b" link set "$lb" up
  ip -n "$PREFIX-h$a" route add "$(host_addr "$b")/32" dev "$la" src "$(host_addr "$a")"
  ip -n "$PREFIX-h$b" route add "$(host_addr "$a")/32" dev "$lb" src "$(host_addr "$b")"
  log "link: h$a <-> h$b"
}

cmd_unlink() {
  load_state "${3:-}"
  local a b; a=$(host_index "$1"); b=$(host_index "$2")
  local la="${PREFIX}L${a}x${b}" lb="${PREFIX}L${b}x${a}"
  ip -n "$PREFIX-h$a" link del dev "$la" 2>/dev/null || true
  ip -n "$PREFIX-h$b" link del dev "$lb" 2>/dev/null || true
  log "unlink: h$a -/- h$b"
}

cmd_status() {
  STATE=$(state_dir_arg "${1:-}")
  [[ -f "$STATE/resources" ]] || { echo "no testbed recorded in $STATE"; return 0; }
  local kind name
  while read -r kind name; do
    case "$kind" in
      netns) ip netns list | awk '{print $1}' | grep -qx -- "$name" && echo "netns $name: present" || echo "netns $name: gone" ;;
      link) ip link show dev "$name" >/dev/null 2>&1 && echo "link $name: present (root ns)" || echo "link $name: not in root ns" ;;
      pid) kill -0 "$name" 2>/dev/null && echo "pid $name: running" || echo "pid $name: gone" ;;
      blackhole) has_blackhole "$name" && echo "blackhole $name: present" || echo "blackhole $name: gone" ;;
      *) echo "$kind $name" ;;
    esac
  done <"$STATE/resources"
}

main() {
  local cmd=${1:-}
  shift || true
  case "$cmd" in
    up) (( $# == 2 )) || die "usage: testbed.sh up N STATE_DIR"; cmd_up "$1" "$2" ;;
    down) (( $# == 1 )) || die "usage: testbed.sh down STATE_DIR"; cmd_down "$1" ;;
    cut) (( $# >= 1 )) || die "usage: testbed.sh cut HOST [STATE_DIR]"; cmd_cut "$@" ;;
    restore) (( $# >= 1 )) || die "usage: testbed.sh restore HOST [STATE_DIR]"; cmd_restore "$@" ;;
    link) (( $# >= 2 )) || die "usage: testbed.sh link HOST_A HOST_B [STATE_DIR]"; cmd_link "$@" ;;
    unlink) (( $# >= 2 )) || die "usage: testbed.sh unlink HOST_A HOST_B [STATE_DIR]"; cmd_unlink "$@" ;;
    status) cmd_status "$@" ;;
    *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
}

main "$@"
