# castat.py CAST N: the screen after the output of step N (before marker "step N+1"), one row a line
import json, re, sys, unicodedata
lines = open(sys.argv[1], encoding='utf-8').read().splitlines()
h = json.loads(lines[0]); W, H = h['width'], h['height']
scr = [[' '] * W for _ in range(H)]; x = y = 0
data = ''
for ev in map(json.loads, lines[1:]):
    if ev[1] == 'm' and ev[2] == 'step %d' % (int(sys.argv[2]) + 1): break
    if ev[1] == 'o': data += ev[2]
i = 0
while i < len(data):
    ch = data[i]
    if ch == '\x1b':
        m = re.match(r'\x1b\[([?0-9;]*)([A-Za-z])', data[i:])
        p, f = m.group(1), m.group(2)
        if f == 'H':
            a = [int(v) for v in p.split(';')] if p else [1, 1]
            y, x = a[0] - 1, a[1] - 1 if len(a) > 1 else 0
        elif f == 'J':
            scr = [[' '] * W for _ in range(H)]
        i += m.end(); continue
    if unicodedata.combining(ch) and x > 0: scr[y][x - 1] += ch
    else:
        scr[y][x] = ch
        if unicodedata.east_asian_width(ch) in 'WF': scr[y][x + 1] = ''; x += 1
        x += 1
    i += 1
print('\n'.join(''.join(r) for r in scr))
