#!/usr/bin/env bash
# chat_file.sh: --chat-template-file end to end on the bundled demo model: the prompt tokens are
# the tokenizer's tokens of the text the file's template makes (checked against `unmask tokenize`
# of that text, typed here), --system fills {system}, --no-chat wins, and every bad file (a
# malformed line, a missing file, a directory, a FIFO, a file over the size limit, a system
# prompt the template has no place for) fails with one line naming the file (and the line).
# Then a model file's own template in the same format (unmask.chat_template): used when the run
# names none, beaten by --no-chat, --chat-template, --chat-template-file and a preset's
# chat_template, reported by `unmask info` (text and --json), and when malformed one line
# naming the file and the key, --no-chat or not, with info's verdict saying the same.
# Until the flag is wired into the generation options (issue 19) the script reports skips.
. "$(dirname "$0")/lib.sh"
SUITE=chat_file
MODEL=models/unmask-demo.gguf

if ! "$BIN" generate --help 2>&1 | grep -q -- '--chat-template-file'; then
  skip "chat-template-file" "this unmask has no --chat-template-file yet"
  finish; exit 0
fi

# prompt ids of a run: the first n_prompt of "tokens" in --json
prompt_ids() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(*d["tokens"][:d["n_prompt"]])'; }
gen() { "$BIN" generate -m "$MODEL" --gen 4 --steps 2 -t 1 --json "$@" 2>/dev/null; }

printf '# a test template\nuser = "[{user}]"   # one turn\nassistant = ">"\nsystem = "<{system}>\\n"\nbos = none\n' >"$TMP/t.chat"
want=$("$BIN" tokenize -m "$MODEL" --ids-only --no-bos '[Hi]>')
got=$(gen -p Hi --chat-template-file "$TMP/t.chat" | prompt_ids)
if [ -n "$want" ] && [ "$got" = "$want" ]; then ok "user and assistant strings around the prompt"; else fail "template text" "got '$got', wanted '$want'"; fi
want=$("$BIN" tokenize -m "$MODEL" --ids-only --no-bos $'<Be brief.>\n[Hi]>')
got=$(gen -p Hi --system "Be brief." --chat-template-file "$TMP/t.chat" | prompt_ids)
if [ "$got" = "$want" ]; then ok "--system fills {system}"; else fail "system text" "got '$got', wanted '$want'"; fi
want=$("$BIN" tokenize -m "$MODEL" --ids-only 'Hi')
got=$(gen -p Hi --chat-template-file "$TMP/t.chat" --no-chat | prompt_ids)
if [ "$got" = "$want" ]; then ok "--no-chat wins over the file"; else fail "--no-chat" "got '$got', wanted '$want'"; fi

# bad files: exit 1, one line naming the file (and the line), before any model work
bad() {  # NAME WANT-IN-STDERR FILE
  "$BIN" generate -m "$MODEL" -p Hi --gen 4 --steps 2 -t 1 --chat-template-file "$3" >"$TMP/o" 2>"$TMP/e"
  local rc=$? line
  line=$(grep -c '^unmask generate: ' "$TMP/e")
  if [ $rc = 1 ] && [ "$line" = 1 ] && grep -qF -- "$2" "$TMP/e"; then ok "$1"
  else fail "$1" "rc $rc: $(tr '\n' '|' <"$TMP/e" | head -c 300) (wanted: $2)"; fi
}
printf 'user = "{user}"\nasistant = ""\n' >"$TMP/typo.chat"
bad "unknown key: FILE:LINE" "$TMP/typo.chat:2: unknown key 'asistant'" "$TMP/typo.chat"
printf 'user = "no placeholder"\nassistant = ""\n' >"$TMP/ph.chat"
bad "user without {user}: FILE:LINE" "$TMP/ph.chat:1: user must hold {user} once" "$TMP/ph.chat"
printf 'user = "{user}\nassistant = ""\n' >"$TMP/q.chat"
bad "unclosed quote: FILE:LINE" "$TMP/q.chat:1: missing closing" "$TMP/q.chat"
bad "missing file" "$TMP/none.chat" "$TMP/none.chat"
mkdir "$TMP/dir"
bad "a directory" "$TMP/dir: not a regular file" "$TMP/dir"
mkfifo "$TMP/fifo"
bad "a FIFO: refused at once" "$TMP/fifo: not a regular file" "$TMP/fifo"
head -c 70000 /dev/zero | tr '\0' '#' >"$TMP/big.chat"
bad "over 64 KiB" "$TMP/big.chat: larger than" "$TMP/big.chat"
printf 'user = "{user}"\nassistant = ""\n' >"$TMP/nosys.chat"
"$BIN" generate -m "$MODEL" -p Hi --system S --gen 4 --steps 2 -t 1 --chat-template-file "$TMP/nosys.chat" >"$TMP/o" 2>"$TMP/e"
rc=$?
if [ $rc = 1 ] && grep -qF "$TMP/nosys.chat: no 'system' line" "$TMP/e"; then ok "--system with no system line: refused"
else fail "--system without a system line" "rc $rc: $(head -c 300 "$TMP/e")"; fi
cmp -s "$TMP/typo.chat" <(printf 'user = "{user}"\nasistant = ""\n') && ok "the template file is left as it was" || fail "template file changed"

# a model file's own template (unmask.chat_template, the same format): used when the run names
# none; --chat-template, --chat-template-file, --no-chat and a preset's chat_template win
ED="python3 tests/cli/gguf_edit.py"
# (gguf_edit reads a value holding '\' as a Python bytes literal: \\n is the template's escape)
$ED "$MODEL" "$TMP/own.gguf" 'set:unmask.chat_template:str:user = "<|endoftext|>Q: {user}\\n"\nassistant = "A:"\n'
own() { "$BIN" generate -m "$TMP/own.gguf" --gen 4 --steps 2 -t 1 --json "$@" 2>/dev/null | prompt_ids; }
want=$("$BIN" tokenize -m "$MODEL" --ids-only --no-bos $'<|endoftext|>Q: Hi\nA:')
got=$(own -p Hi)
if [ -n "$want" ] && [ "$got" = "$want" ] && [ "${got%% *}" = 4094 ]; then ok "the file's own template: its special token, then the prompt"
else fail "the file's own template" "got '$got', wanted '$want'"; fi
want=$("$BIN" tokenize -m "$MODEL" --ids-only 'Hi')
got=$(own -p Hi --no-chat)
if [ "$got" = "$want" ]; then ok "--no-chat wins over the file's own template"; else fail "--no-chat over unmask.chat_template" "got '$got', wanted '$want'"; fi
want=$("$BIN" tokenize -m "$MODEL" --ids-only --no-bos $'<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n')
got=$(own -p Hi --chat-template chatml)
if [ "$got" = "$want" ]; then ok "--chat-template wins over the file's own template"; else fail "--chat-template over unmask.chat_template" "got '$got', wanted '$want'"; fi
want=$("$BIN" tokenize -m "$MODEL" --ids-only --no-bos '[Hi]>')
got=$(own -p Hi --chat-template-file "$TMP/t.chat")
if [ "$got" = "$want" ]; then ok "--chat-template-file wins over the file's own template"; else fail "--chat-template-file over unmask.chat_template" "got '$got', wanted '$want'"; fi
abs_bin=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
printf '[own]\npath = own.gguf\nchat_template = none\n' >"$TMP/models.conf"
want=$("$BIN" tokenize -m "$MODEL" --ids-only 'Hi')
got=$(cd "$TMP" && "$abs_bin" generate -M own -p Hi --gen 4 --steps 2 -t 1 --json 2>/dev/null | prompt_ids)
if [ "$got" = "$want" ]; then ok "a preset's chat_template wins over the file's own template"; else fail "preset over unmask.chat_template" "got '$got', wanted '$want'"; fi
"$BIN" info "$TMP/own.gguf" >"$TMP/o"
expect_grep "info: the template used is the file's own" "^  template used +the file's own, unmask.chat_template \([0-9]+ bytes\)$" "$TMP/o"
"$BIN" info --json "$TMP/own.gguf" >"$TMP/o"
if python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tokenizer"]; sys.exit(t["template"] != "unmask.chat_template" or t["template_from"] != "unmask.chat_template")' "$TMP/o"
then ok "info --json: template and template_from"; else fail "info --json template" "$(head -c 300 "$TMP/o")"; fi
# malformed: one line naming the file and the key (and the line in it), even with --no-chat
$ED "$MODEL" "$TMP/bad.gguf" 'set:unmask.chat_template:str:user = "{user}"\nasistant = ""\n'
for extra in "" --no-chat; do
  "$BIN" generate -m "$TMP/bad.gguf" -p Hi --gen 4 --steps 2 -t 1 $extra >"$TMP/o" 2>"$TMP/e"
  rc=$?
  if [ $rc = 1 ] && [ "$(wc -l <"$TMP/e")" = 1 ] &&
     grep -qxF "unmask generate: $TMP/bad.gguf: unmask.chat_template:2: unknown key 'asistant' (system, no_system, user, assistant, bos, trim)" "$TMP/e"
  then ok "a malformed unmask.chat_template: one line naming the file and the key ${extra:+($extra)}"
  else fail "malformed unmask.chat_template $extra" "rc $rc: $(head -c 300 "$TMP/e")"; fi
done
"$BIN" info "$TMP/bad.gguf" >"$TMP/o"
expect_grep "info: a malformed unmask.chat_template is why it does not run" "^runnable: no: unmask.chat_template:2: unknown key 'asistant'" "$TMP/o"
finish
