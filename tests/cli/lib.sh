# lib.sh: helpers for the end-to-end shell tests (sourced, never run alone).
# Each test file sets SUITE, calls ok/fail through the check helpers, and ends with `finish`.
set -u
BIN=${UNMASK_BIN:-./unmask}
case "$BIN" in /*) ;; *) BIN=$PWD/$BIN ;; esac   # absolute: some cases run in another directory
_pass=0; _fail=0; _skip=0
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
ok()   { echo "ok   $1"; _pass=$((_pass + 1)); }
fail() { echo "FAIL $1"; [ $# -gt 1 ] && printf '    %s\n' "$2"; _fail=$((_fail + 1)); }
skip() { echo "skip $1: $2"; _skip=$((_skip + 1)); }
# expect_rc NAME RC CMD... : run CMD, check exit status
expect_rc() { local name=$1 want=$2; shift 2; "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?
  if [ "$rc" -eq "$want" ]; then ok "$name"; else fail "$name" "exit $rc, wanted $want; stderr: $(head -c 400 "$TMP/err")"; fi; }
# expect_out NAME PATTERN FILE : grep -E PATTERN in FILE
expect_grep() { if grep -qE -- "$2" "$3"; then ok "$1"; else fail "$1" "no /$2/ in $(head -c 400 "$3")"; fi; }
# temps_in DIR : the temporary files an unfinished output left in DIR (outfile.c names them
# ".NAME.XXXXXX"; older builds used NAME.tmp and NAME.tmp.PID), one per line; empty when none
temps_in() { ls -A "$1" | grep -E '^\..+\.[A-Za-z0-9]{6}$|\.tmp(\.[0-9]+)?$'; }
# synth_quant_matches LIST REMAKER : each line of LIST is "shape type mixture in_sha out_sha":
# `unmask synth` must still write the recorded input (a change of synth's output fails, naming
# REMAKER, the script that remakes LIST with llama-quantize: the comparison would otherwise stop
# proving anything without a word) and `unmask quantize` must turn it into the bytes
# llama-quantize wrote
synth_quant_matches() { local shape ty mix in_sha out_sha name
  while read -r shape ty mix in_sha out_sha; do
    case "$shape" in ''|\#*) continue ;; esac
    name="synth $shape $ty -> $mix"
    if ! "$BIN" synth --shape "$shape" --type "$ty" -o "$TMP/s.gguf" >/dev/null 2>&1; then
      fail "$name" "unmask synth failed"; continue
    fi
    if [ "$(sha256sum <"$TMP/s.gguf" | cut -d' ' -f1)" != "$in_sha" ]; then
      fail "$name" "unmask synth no longer writes the recorded input; remake the list with $2"; continue
    fi
    if ! "$BIN" quantize -q -t 2 "$TMP/s.gguf" "$TMP/q.gguf" "$mix" 2>"$TMP/err"; then
      fail "$name" "$(cat "$TMP/err")"; continue
    fi
    if [ "$(sha256sum <"$TMP/q.gguf" | cut -d' ' -f1)" = "$out_sha" ]; then ok "$name: same bytes as llama-quantize"
    else fail "$name: same bytes as llama-quantize"; fi
  done <"$1"; }
finish() { echo "$SUITE: $_pass passed, $_fail failed, $_skip skipped"; }
# sig_ignored NAME: signal NAME was ignored when this shell started (SIGHUP under nohup; SIGINT
# and SIGQUIT in a background job of a shell without job control); a shell cannot undo that
# (POSIX) and unmask keeps an inherited SIG_IGN, so a test that needs the signal delivered
# must skip, saying why
sig_ignored() { local m n; n=$(kill -l "$1" 2>/dev/null) || return 1
  m=$(awk '/^SigIgn:/ {print $2}' /proc/$$/status 2>/dev/null); [ -n "$m" ] && (( (0x$m >> (n - 1)) & 1 )); }
hup_ignored() { sig_ignored HUP; }
