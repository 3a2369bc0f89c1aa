#!/usr/bin/env bash
# Downloads and uploads over an emulated long, lossy link: transferd against curl and
# `aria2c -x16 -s16 -k1M` in the same run (bars: at least 1.2× aria2c at RTT 80 ms / 0.1% loss and
# at RTT 200 ms / 1%, at least 80% of the link at 80 ms / 0.1%, a 3 s outage costing at most the
# outage + 2 s with nothing fetched twice; a 1 GiB upload cut at 50% — by a cut connection, and by
# kill -9 of transferd — sending at most 1.05× its size in all).
#
# The link (made and removed by this script; needs root or CAP_NET_ADMIN):
#   two network namespaces, twan-origin (10.211.0.1) and twan-client (10.211.0.2), joined by a veth
#   pair with offloads off (loss acts on 1500-byte packets, not on 64 KiB GSO/GRO aggregates);
#   a tbf rate cap of 1 Gbit/s on each side's egress; random loss, each direction, with an iptables
#   `statistic --mode random` DROP on ingress; the delay with bench/delayline.c, an NFQUEUE program
#   holding each incoming packet RTT/2 in each namespace (this kernel has no netem). The delay is on
#   ingress, after the veth has detached the packet from its socket: held on the sender's egress,
#   packets would count against TCP small queues and throttle the sender.
#   The script runs itself again inside twan-client: transferd, curl, aria2c and the API calls
#   all live there (transferd's API on that namespace's loopback); nginx and the upload origin
#   live in twan-origin.
# The links, in order: RTT 1 ms no loss; 80 ms 0.1%; 200 ms 1%; 40 ms 0.5% (the twin of the next,
# for the cost of the outage); 40 ms 0.5% with every packet dropped for 3 s once the origin has
# sent half of the file. Each is checked with ping before use.
# Downloads: a 256 MiB file from a stock nginx, to tmpfs; curl, aria2c and transferd (an ephemeral
# session, default configuration) take turns, BENCH_RUNS runs each, medians. Every output's sha256
# is checked; nginx's access log ($body_bytes_sent) gives the bytes sent beyond the file's size.
# Uploads: BENCH_WAN_UPLOAD_SIZE from a file through a background session, cut once the origin has
# received half of it — by resetting the connection (`ss -K` on the origin side) and, separately,
# by kill -9 of transferd, started again on the same data directory. What the origin received is
# its TCP payload in all (iptables byte and packet counters on its port, less 52 bytes of headers a
# packet): every byte sent twice counts.
# Also shown: the congestion control of each namespace, the delay line's CPU (2 cores here: it
# competes with the transfers) and the kernel's nfqueue drop counters (non-zero means the delay line
# did not keep up and the link lost more than asked).
#
# Usage: bench/wan.sh (as root; 15–20 minutes with the defaults); exits 1 when a check fails or a
# bar is missed. One run at a time: the namespaces have fixed names, and a run removes what an
# earlier one left behind.
# Environment:
#   BENCH_RUNS [3]                  runs per tool and link (medians)
#   BENCH_WAN_SIZE [268435456]      bytes of the downloaded file
#   BENCH_ONLY [links,uploads]      links, uploads or both
#   BENCH_WAN_LINKS                 the links, space-separated RTT_MS:LOSS_%:OUTAGE_S
#                                   [1:0:0 80:0.1:0 200:1:0 40:0.5:0 40:0.5:3]
#   BENCH_WAN_CC [the namespace's default]  TCP congestion control of the origin: cubic, bbr, reno
#                                   (added to the host's tcp_allowed_congestion_control for the run
#                                   if missing). Loss-based ones are far slower on these links (cubic:
#                                   about 0.9 MB/s for one connection at 80 ms / 0.1%): give a
#                                   smaller BENCH_WAN_SIZE
#   BENCH_WAN_CONFIG [{}]           transferd's session configuration for the downloads (JSON)
#   BENCH_WAN_UPLOAD_SIZE [1073741824], BENCH_WAN_UPLOAD_LINK [80:0.1:0]
#   BENCH_WAN_UPLOAD_ORIGIN [plain] plain (PUT, nothing resumable), ietf or tus (the test origin
#                                   Tests/integration/support/resumable_origin.py, when present;
#                                   otherwise the table says "origin not available")
#   BENCH_WAN_TIMEOUT [600]         seconds any one transfer may take
#   TRANSFERD_BINARY [.build/release/transferd]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

NS_O=twan-origin
NS_C=twan-client
IP_O=10.211.0.1
IP_C=10.211.0.2
DELAYLINE=/tmp/transferd-bench-delayline

# --- the namespaces (run outside them) -------------------------------------------------------------
allowed_cc=""  # the host's tcp_allowed_congestion_control before this run widened it, if it did

teardown() {  # idempotent: also removes what an earlier, killed run left behind
  local ns pid
  [ -z "$allowed_cc" ] || sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed_cc"
  for ns in $NS_C $NS_O; do
    ip netns list | grep -qw "^$ns" || continue
    for pid in $(ip netns pids "$ns"); do kill -TERM "$pid" 2>/dev/null || true; done
    sleep 0.2
    for pid in $(ip netns pids "$ns"); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$ns"
  done
}

make_namespaces() {
  teardown
  ip netns add $NS_O
  ip netns add $NS_C
  ip link add twan-o netns $NS_O type veth peer name twan-c netns $NS_C
  local ns dev ip
  for side in "$NS_O twan-o $IP_O" "$NS_C twan-c $IP_C"; do
    read -r ns dev ip <<<"$side"
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$ip/24" dev "$dev"
    ip netns exec "$ns" ethtool -K "$dev" tso off gso off gro off >/dev/null 2>&1 || true
    ip -n "$ns" link set "$dev" up
    # 1 Gbit/s; the burst a little above one timer tick's worth, 10 ms of queue.
    tc -n "$ns" qdisc add dev "$dev" root tbf rate 1gbit burst 256kb latency 10ms
  done
}

outside() {
  if ! ip netns add twan-probe 2>/dev/null; then
    log "cannot create network namespaces (needs root or CAP_NET_ADMIN)"
    exit 2
  fi
  ip netns del twan-probe
  install_tools nginx curl aria2 iptables ethtool iputils-ping iproute2 gcc libnetfilter-queue-dev
  ensure_binary
  gcc -O2 -Wall -o "$DELAYLINE" bench/delayline.c -lnetfilter_queue -lnfnetlink
  trap teardown EXIT
  trap 'exit 130' INT TERM
  make_namespaces
  # A namespace may only choose a congestion control that the host allows (tcp_allowed_congestion_control).
  local allowed
  allowed=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
  if [ -n "${BENCH_WAN_CC:-}" ] && [[ " $allowed " != *" $BENCH_WAN_CC "* ]]; then
    log "allowing $BENCH_WAN_CC in namespaces for this run (tcp_allowed_congestion_control: $allowed)"
    allowed_cc=$allowed
    sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed $BENCH_WAN_CC"
  fi
  local rc=0
  WAN_INSIDE=1 ip netns exec $NS_C "$0" "$@" || rc=$?
  exit $rc
}

# --- inside twan-client ------------------------------------------------------------------------------
RUNS=${BENCH_RUNS:-3}
SIZE=${BENCH_WAN_SIZE:-268435456}
ONLY=${BENCH_ONLY:-links,uploads}
LINKS=${BENCH_WAN_LINKS:-1:0:0 80:0.1:0 200:1:0 40:0.5:0 40:0.5:3}
CONFIG=${BENCH_WAN_CONFIG:-"{}"}
UPLOAD_SIZE=${BENCH_WAN_UPLOAD_SIZE:-1073741824}
UPLOAD_LINK=${BENCH_WAN_UPLOAD_LINK:-80:0.1:0}
UPLOAD_ORIGIN=${BENCH_WAN_UPLOAD_ORIGIN:-plain}
TIMEOUT=${BENCH_WAN_TIMEOUT:-600}
WAN=(python3 "$PWD/bench/wan.py")
DRIVE=(python3 "$PWD/bench/drive.py")
ARIA2=(aria2c -q --console-log-level=error --summary-interval=0 --download-result=hide
       --file-allocation=none --allow-overwrite=true --auto-file-renaming=false -x16 -s16 -k1M)
UPLOAD_PORT=8080
in_o=(ip netns exec $NS_O)

want() { [[ ",$ONLY," == *",$1,"* ]]; }

ipt_both() {  # iptables args...: the same rule change in both namespaces (the interface is each side's)
  "${in_o[@]}" iptables "${@//@dev/twan-o}"
  iptables "${@//@dev/twan-c}"
}

delay_pids=()
stop_delaylines() {
  local pid
  for pid in "${delay_pids[@]}"; do kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
  delay_pids=()
}

start_delaylines() {  # microseconds each way
  stop_delaylines
  # Real-time priority: on a loaded machine a late wake-up would lengthen the delay.
  "${in_o[@]}" chrt -f 50 "$DELAYLINE" 0 "$1" >"$work/delay-o.out" 2>>"$work/delayline.log" &
  delay_pids+=($!)
  chrt -f 50 "$DELAYLINE" 0 "$1" >"$work/delay-c.out" 2>>"$work/delayline.log" &
  delay_pids+=($!)
  for _ in $(seq 50); do
    grep -q ready "$work/delay-o.out" && grep -q ready "$work/delay-c.out" && return 0
    sleep 0.1
  done
  log "the delay lines did not start: $(cat "$work/delayline.log")"
  exit 1
}

inside_cleanup() {
  stop_delaylines
  [ -n "${origin_pid:-}" ] && kill -TERM "$origin_pid" 2>/dev/null || true
  cleanup
}

link_rules() {  # rtt-ms loss-%: delay and loss on each side's ingress
  local rtt=$1 loss=$2
  ipt_both -t raw -F PREROUTING
  ipt_both -t mangle -F PREROUTING
  if [ "$(awk -v l="$loss" 'BEGIN { print (l > 0) }')" = 1 ]; then
    ipt_both -t raw -A PREROUTING -i @dev -m statistic --mode random \
      --probability "$(awk -v l="$loss" 'BEGIN { printf "%.6f", l / 100 }')" -j DROP
  fi
  ipt_both -t mangle -A PREROUTING -i @dev -j NFQUEUE --queue-num 0 --queue-bypass
  start_delaylines "$(awk -v r="$rtt" 'BEGIN { printf "%d", r * 500 }')"
}

check_rtt() {  # rtt-ms: ping the origin; the average must be within 20% (+2 ms: wake-ups on a loaded machine) of what was asked
  local avg
  # -U: user-to-user time; the kernel's receive timestamp is taken before the ingress delay.
  avg=$(ping -U -q -c 10 -i 0.2 -W 2 $IP_O | awk -F/ '/^rtt/ { print $5 }')
  log "  ping: RTT asked $1 ms, measured avg ${avg:-none} ms"
  if [ -z "$avg" ] || [ "$(awk -v a="$avg" -v r="$1" 'BEGIN { print (a > r * 1.2 + 2 || a < r * 0.8) }')" = 1 ]; then
    log "the link's RTT is not what was asked"
    exit 1
  fi
}

cpu_ticks() {  # pid... -> their CPU ticks (user + system) in all
  local pid sum=0 t
  for pid in "$@"; do
    t=$(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat" 2>/dev/null || echo 0)
    sum=$(( sum + t ))
  done
  echo $sum
}

queue_drops() {  # the kernel's nfqueue drops in both namespaces: queue full + netlink overrun
  { "${in_o[@]}" cat /proc/net/netfilter/nfnetlink_queue; cat /proc/net/netfilter/nfnetlink_queue; } |
    awk '{ q += $6; u += $7 } END { printf "%d queue-full, %d netlink-overrun", q, u }'
}

origin_sent() {  # bytes nginx has sent (bodies) so far, from its access log
  awk '{ s += $1 } END { printf "%.0f", s }' "$work/access.log" 2>/dev/null || echo 0
}

origin_counter() {  # chain -> "bytes packets" of the counting rule in the origin's mangle chain
  "${in_o[@]}" iptables -t mangle -nvxL "$1" | awk '/wan-count/ { print $2, $1; exit }'
}

outage() {  # seconds half-bytes: once the origin has sent half the file, every packet dropped for a while
  local bytes
  while :; do
    read -r bytes _ <<<"$(origin_counter POSTROUTING)"
    [ "${bytes:-0}" -ge "$2" ] && break
    sleep 0.05
  done
  ipt_both -t raw -I PREROUTING 1 -i @dev -j DROP
  sleep "$1"
  ipt_both -t raw -D PREROUTING -i @dev -j DROP
  echo "outage at $(date +%T.%N | cut -c1-12)" >>"$work/outages"
}

download_once() {  # link tool run outage-s -> records time and extra bytes
  local key=$1 tool=$2 r=$3 outage_s=$4 t sent before watcher=""
  rm -rf "${out:?}"/*
  mkdir -p "$out/transferd"
  before=$(origin_sent)
  "${in_o[@]}" iptables -t mangle -Z POSTROUTING
  if [ "$outage_s" != 0 ]; then
    outage "$outage_s" $(( SIZE / 2 )) &
    watcher=$!
  fi
  case $tool in
    curl) t=$(timed curl -sf --max-time "$TIMEOUT" -o "$out/curl.bin" "$url") ;;
    aria2c) t=$(timed "${ARIA2[@]}" --timeout=60 -d "$out" -o aria2c.bin "$url") ;;
    transferd)
      t=$("${DRIVE[@]}" download --api "$api" --token "$token" --session "wan.$key.r$r" --mode ephemeral \
            --config "$CONFIG" --list "$list" --dest "$out/transferd" --sample 1 --timeout "$TIMEOUT")
      transferd_alive ;;
  esac
  if [ -n "$watcher" ]; then
    if kill -0 "$watcher" 2>/dev/null; then
      log "  the transfer ended before the outage began"
      kill "$watcher" 2>/dev/null || true
      ipt_both -t raw -D PREROUTING -i @dev -j DROP 2>/dev/null || true
    fi
    wait "$watcher" 2>/dev/null || true
  fi
  local file=$out/$tool.bin
  [ "$tool" = transferd ] && file=$out/transferd/wan.bin
  local got
  got=$(sha256sum "$file" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    log "$tool on $key run $r: sha256 $got, the file's is $sha"
    exit 1
  fi
  sleep 0.3  # nginx logs a request when its connection is done
  sent=$(( $(origin_sent) - before ))
  log "  run $r $tool: ${t}s ($(awk -v b="$SIZE" -v t="$t" 'BEGIN { printf "%.1f", b / t / 1e6 }') MB/s), origin sent $sent bytes, sha256 ok"
  echo "dl $key $tool $r $t $(( sent - SIZE ))" >>"$work/results"
}

bench_link() {  # rtt:loss:outage
  local rtt loss outage_s key
  IFS=: read -r rtt loss outage_s <<<"$1"
  key="rtt${rtt}-loss${loss}-out${outage_s}"
  echo "link $key $rtt $loss $outage_s" >>"$work/results"
  log "link: RTT $rtt ms, $loss% loss each way, outage $outage_s s  [load $(cut -d' ' -f1-3 /proc/loadavg)]"
  link_rules "$rtt" "$loss"
  check_rtt "$rtt"
  local t0 c0 tools=(curl aria2c transferd) r i
  t0=$EPOCHREALTIME
  c0=$(cpu_ticks "${delay_pids[@]}")
  for r in $(seq 1 "$RUNS"); do
    for i in 0 1 2; do
      download_once "$key" "${tools[$(( (i + r) % 3 ))]}" "$r" "$outage_s"
    done
  done
  local cpu
  cpu=$(awk -v c="$(( $(cpu_ticks "${delay_pids[@]}") - c0 ))" -v hz="$(getconf CLK_TCK)" \
    -v t0="$t0" -v t1="$EPOCHREALTIME" 'BEGIN { printf "%.0f%%", 100 * c / hz / (t1 - t0) }')
  log "  delay lines: $cpu of one core over the link's runs; nfqueue drops so far: $(queue_drops)"
}

# --- uploads -----------------------------------------------------------------------------------------
start_upload_origin() {  # sets upload_url, left empty when that origin is not in the tree
  local dir=$work/uploaded
  mkdir -p "$dir"
  upload_url=""
  case $UPLOAD_ORIGIN in
    plain) "${in_o[@]}" "${WAN[@]}" origin --port $UPLOAD_PORT --dir "$dir" >"$work/origin.log" 2>&1 & ;;
    ietf|tus)
      [ -f Tests/integration/support/resumable_origin.py ] || return 0
      "${in_o[@]}" python3 Tests/integration/support/resumable_origin.py --protocol "$UPLOAD_ORIGIN" \
        --host 0.0.0.0 --port $UPLOAD_PORT --dir "$dir" >"$work/origin.log" 2>&1 & ;;
    *) log "BENCH_WAN_UPLOAD_ORIGIN must be plain, ietf or tus"; exit 2 ;;
  esac
  origin_pid=$!
  for _ in $(seq 50); do
    if "${in_o[@]}" ss -ltn | grep -q ":$UPLOAD_PORT "; then
      # tus: the task's URL is the creation URL, POSTed to; the others take the body as it is.
      upload_url="http://$IP_O:$UPLOAD_PORT/wan-upload.bin"
      upload_task=(--method PUT)
      [ "$UPLOAD_ORIGIN" = tus ] && upload_url="http://$IP_O:$UPLOAD_PORT/files" && upload_task=(--method POST --resumable tus)
      return 0
    fi
    sleep 0.1
  done
  log "the $UPLOAD_ORIGIN upload origin did not start"
  exit 1
}

origin_received() {  # TCP payload the upload origin received since the counters were zeroed
  local bytes packets
  read -r bytes packets <<<"$(origin_counter PREROUTING)"
  echo $(( bytes - 52 * packets ))
}

upload_once() {  # how (reset|kill9) upload-url
  local how=$1 url=$2 id state sent code t0 half=$(( UPLOAD_SIZE / 2 ))
  "${in_o[@]}" iptables -t mangle -Z PREROUTING
  id=$("${WAN[@]}" upload --api "$api" --token "$token" --session "wan.upload.$how" --url "$url" \
         --file "$upload_file" "${upload_task[@]}")
  t0=$EPOCHREALTIME
  while [ "$(origin_received)" -lt $half ]; do
    sleep 0.05
    transferd_alive
  done
  case $how in
    reset)
      # The origin's side is destroyed (ss -K, where the kernel allows it), and the client's port
      # rejected with a TCP reset from then on, so the client sees the cut whichever way it goes.
      local ports port
      ports=$(ss -Htn state established dst $IP_O:$UPLOAD_PORT | awk '{ n = split($3, a, ":"); print a[n] }')
      log "  cutting the connection (client port ${ports//$'\n'/ }) at $(origin_received) bytes"
      for port in $ports; do
        "${in_o[@]}" iptables -I INPUT -p tcp -s $IP_C --sport "$port" --dport $UPLOAD_PORT -j REJECT --reject-with tcp-reset
      done
      "${in_o[@]}" ss -K dst $IP_C sport = :$UPLOAD_PORT >/dev/null 2>&1 || true ;;
    kill9)
      log "  kill -9 transferd at $(origin_received) bytes, then starting it again on the same data directory"
      kill -KILL "$transferd_pid"
      wait "$transferd_pid" 2>/dev/null || true
      launch_transferd "$api_port" "$work/transferd.log" --allow-path "$out" --allow-path "$upload_dir" ;;
  esac
  local deadline=$(( SECONDS + TIMEOUT ))
  while :; do
    read -r state sent code <<<"$("${WAN[@]}" state --api "$api" --token "$token" --session "wan.upload.$how" --id "$id" --wait 30)"
    case $state in completed|failed|canceled) break ;; esac
    [ $SECONDS -lt $deadline ] || { log "  the upload is still $state after ${TIMEOUT}s"; break; }
  done
  sleep 0.5  # the origin's last ACKs
  "${in_o[@]}" iptables -F INPUT
  local received completed=no seconds
  received=$(origin_received)
  seconds=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  if [ "$state" = completed ]; then
    completed=yes
    local stored
    stored=$(find "$work/uploaded" -type f -size "${UPLOAD_SIZE}c" | head -n1)
    if [ -z "$stored" ] || [ "$(sha256sum "$stored" | cut -d' ' -f1)" != "$upload_sha" ]; then
      log "  the upload completed but the origin holds no file of its size and sha256"
      exit 1
    fi
  fi
  log "  $how: $state (error $code), $sent bytes sent by transferd's count, the origin received $received in all, ${seconds}s"
  echo "ul $how $UPLOAD_ORIGIN $UPLOAD_SIZE $received $completed $seconds" >>"$work/results"
  rm -rf "${work:?}/uploaded"/*
}

bench_uploads() {
  local rtt loss outage_s
  IFS=: read -r rtt loss outage_s <<<"$UPLOAD_LINK"
  log "uploads: $((UPLOAD_SIZE / 1048576)) MiB to a $UPLOAD_ORIGIN origin, RTT $rtt ms, $loss% loss  [load $(cut -d' ' -f1-3 /proc/loadavg)]"
  start_upload_origin
  if [ -z "$upload_url" ]; then
    log "  $UPLOAD_ORIGIN: origin not available (no Tests/integration/support/resumable_origin.py)"
    echo "ul reset $UPLOAD_ORIGIN $UPLOAD_SIZE -1 no 0" >>"$work/results"
    echo "ul kill9 $UPLOAD_ORIGIN $UPLOAD_SIZE -1 no 0" >>"$work/results"
    return 0
  fi
  link_rules "$rtt" "$loss"
  check_rtt "$rtt"
  # Before the NFQUEUE rule: a packet the delay line accepts leaves the chain there.
  "${in_o[@]}" iptables -t mangle -I PREROUTING 1 -i twan-o -p tcp --dport $UPLOAD_PORT -m comment --comment wan-count
  upload_file=$upload_dir/source.bin
  head -c "$UPLOAD_SIZE" /dev/urandom >"$upload_file"
  upload_sha=$(sha256sum "$upload_file" | cut -d' ' -f1)
  upload_once reset "$upload_url"
  upload_once kill9 "$upload_url"
}

inside() {
  bench_setup wan
  trap inside_cleanup EXIT
  out=$(mktemp -d /dev/shm/transferd-wan-out.XXXXXX)
  cleanup_paths+=("$out")
  : >"$work/results"
  local cc
  [ -z "${BENCH_WAN_CC:-}" ] || "${in_o[@]}" sysctl -qw net.ipv4.tcp_congestion_control="$BENCH_WAN_CC"
  cc=$("${in_o[@]}" sysctl -n net.ipv4.tcp_congestion_control)

  echo "transferd WAN bench — $(date -u +%FT%TZ), $(nproc) cores, $RUNS runs each, medians"
  echo "start:  $(uptime)"
  echo "binary: $BINARY ($(stat -c %y "$BINARY" | cut -d. -f1))"
  echo "link:   veth, tbf 1 Gbit/s each way, offloads off; delay by NFQUEUE, loss by iptables statistic"
  echo "TCP:    origin $cc, client $(sysctl -n net.ipv4.tcp_congestion_control);" \
       "tcp_wmem $("${in_o[@]}" sysctl -n net.ipv4.tcp_wmem | tr '\t' ' ') (origin)," \
       "tcp_rmem $(sysctl -n net.ipv4.tcp_rmem | tr '\t' ' ') (client)"
  echo "tools:  $(curl --version | head -n1 | cut -d' ' -f1-2), $(aria2c --version | head -n1), $($NGINX -v 2>&1 | cut -d' ' -f3)"

  nginx_address=0.0.0.0
  nginx_prefix=("${in_o[@]}")
  mkdir -p "$work/www"
  chmod 755 "$work/www"
  head -c "$SIZE" /dev/urandom >"$work/www/wan.bin"
  chmod 644 "$work/www/wan.bin"
  sha=$(sha256sum "$work/www/wan.bin" | cut -d' ' -f1)
  start_nginx "        root $work/www;
        access_log $work/access.log wan;" "    log_format wan '\$body_bytes_sent \$status';"
  # nginx's port was chosen outside the namespace: inside it, it is free too.
  url="http://$IP_O:$nport/wan.bin"
  # Bytes out of nginx's port, counted on the origin side: the outage's trigger.
  "${in_o[@]}" iptables -t mangle -A POSTROUTING -o twan-o -p tcp --sport "$nport" -m comment --comment wan-count
  list=$work/list
  printf '%s\twan.bin\t%s\t%s\n' "$url" "$SIZE" "$sha" >"$list"
  api_port=$(free_port)
  token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  auth="Authorization: Bearer $token"
  upload_dir=$(mktemp -d /dev/shm/transferd-wan-upload.XXXXXX)
  cleanup_paths+=("$upload_dir")
  launch_transferd "$api_port" "$work/transferd.log" --allow-path "$out" --allow-path "$upload_dir"
  wait_for "$url" -I

  if want links; then
    local link
    for link in $LINKS; do bench_link "$link"; done
  fi
  want uploads && bench_uploads
  transferd_alive
  stop_delaylines
  echo "delay lines: $(tail -n 2 "$work/delayline.log" | tr '\n' ';')"
  echo "nfqueue drops in all: $(queue_drops)"
  echo
  "${WAN[@]}" report "$work/results" --size "$SIZE"
  echo
  transferd_summary
  echo "end:    $(uptime)"
}

if [ -n "${WAN_INSIDE:-}" ]; then inside "$@"; else outside "$@"; fi
