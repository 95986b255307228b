# castat.py CAST [N]: the screen after the output of step N (before marker "step N+1"), or after
# all of the cast's output without N, one row a line. A small terminal written here (cursor
# moves, clears, wide and combining characters), not unmask's; tests/cli/record.sh imports screen().
import json, re, sys, unicodedata


def screen(path, step=None):
    """The screen as a list of rows (lists of cells) and its width and height."""
    lines = open(path, encoding='utf-8').read().splitlines()
    h = json.loads(lines[0]); W, H = h['width'], h['height']
    scr = [[' '] * W for _ in range(H)]; x = y = 0
    data = ''
    for ev in map(json.loads, lines[1:]):
        if step is not None and ev[1] == 'm' and ev[2] == 'step %d' % (step + 1): break
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
    return scr, W, H


if __name__ == '__main__':
    scr, _, _ = screen(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else None)
    print('\n'.join(''.join(r) for r in scr))
