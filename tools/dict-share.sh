#!/usr/bin/env bash
# dict-share.sh [DICT]: how many words of the text on standard input are English words.
# Prints "TOTAL FOUND": words are runs of letters and apostrophes, lower-cased, with leading and
# trailing apostrophes removed; FOUND counts those in the word list DICT (default: the wamerican
# list, /usr/share/dict/american-english, compared lower-cased). The one definition of the
# "dictionary share" used by tests/cli/demo.sh, tools/train/eval.sh and bench/demo_quality.py.
# Exit 2 when the word list cannot be read.
set -euo pipefail
dict=${1:-/usr/share/dict/american-english}
[ -r "$dict" ] || { echo "dict-share: $dict: cannot read the word list (apt-get install wamerican)" >&2; exit 2; }
tr 'A-Z' 'a-z' | tr -c "a-z'\n" ' ' | tr ' ' '\n' | sed "s/^'*//; s/'*\$//" | { grep -v '^$' || true; } |
  awk -v d="$dict" 'BEGIN { while ((getline w < d) > 0) ok[tolower(w)] = 1 }
                   { t++; if ($0 in ok) f++ } END { print t + 0, f + 0 }'
