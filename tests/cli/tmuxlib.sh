# tmuxlib.sh: a private tmux server for the visualizer tests (sourced after lib.sh, never run
# alone). `tmux_begin NAME SKIPNAME` skips the rest of the suite (as SKIPNAME) when tmux is
# missing; otherwise it starts the server on its own socket (unmask-NAME-PID, so parallel suites
# never share one), with a config of its own (256 colours, panes stay after their command exits
# so the exit status can be read, no status bar), an idle session "keep" that holds the server
# up between tests, and a trap that kills the server and removes $TMP on exit.
# Sets SOCK, SLOW (polling budget multiplier: sanitizer builds run slower) and RUN (the
# environment every visualizer runs under: UTF-8, colours on, ThreadSanitizer logs in $TMP).
tmux_begin() {
  if ! command -v tmux >/dev/null 2>&1; then
    skip "$2" "tmux not installed"; finish; exit 0
  fi
  SOCK=unmask-$1-$$
  SLOW=1; [ "${UNMASK_VARIANT:-release}" = release ] || SLOW=4
  cat >"$TMP/tmux.conf" <<'CONF'
set -g default-terminal "tmux-256color"
set -g remain-on-exit on
set -g status off
CONF
  trap 'T kill-server 2>/dev/null; rm -rf "$TMP"' EXIT
  RUN="env -u NO_COLOR LANG=C.UTF-8 LC_ALL=C.UTF-8 TSAN_OPTIONS=log_path=$TMP/tsan"
  T new-session -d -s keep "sleep 600"
}
T() { tmux -u -L "$SOCK" -f "$TMP/tmux.conf" "$@"; }
# cap: the text of session "ui"; wait_for CMD...: poll CMD every 0.1 s for 5 s (x SLOW);
# long_wait: the same for 30 s
cap() { T capture-pane -p -t ui; }
wait_for() { local i n=$((50 * SLOW)); for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 0.1; done; return 1; }
long_wait() { local i n=$((300 * SLOW)); for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 0.1; done; return 1; }
