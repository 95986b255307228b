#!/usr/bin/env python3
"""gif-frame.py: write one frame of an animated GIF as a PNG, with nothing but the standard
library, to look at what `unmask record` drew (the machines here have no ImageMagick).

    python3 tools/gif-frame.py IN.gif OUT.png [FRAME]     FRAME: 0-based, negative from the end
                                                          (default -1: the last frame)

Frames are composed as a viewer shows them (each image drawn over the canvas at its offset;
disposal 2 clears its rectangle to the background, others keep it), so a frame that only
holds the cells that changed is shown whole.
"""
import struct
import sys
import zlib


def lzw(data, min_size):
    clear, end = 1 << min_size, (1 << min_size) + 1
    size, table, out, prev = min_size + 1, None, bytearray(), None
    pos = bits = nbits = 0

    def reset():
        return [bytes([i]) for i in range(clear)] + [b"", b""]
    table = reset()
    while True:
        while nbits < size:
            if pos >= len(data):
                return bytes(out)
            bits |= data[pos] << nbits
            pos += 1
            nbits += 8
        code = bits & ((1 << size) - 1)
        bits >>= size
        nbits -= size
        if code == clear:
            table, size, prev = reset(), min_size + 1, None
            continue
        if code == end:
            return bytes(out)
        if code < len(table):
            entry = table[code]
            if prev is not None:
                table.append(prev + entry[:1])
        else:
            entry = prev + prev[:1]
            table.append(entry)
        out += entry
        prev = entry
        if len(table) == (1 << size) and size < 12:
            size += 1


def frames(buf):
    if buf[:3] != b"GIF":
        sys.exit("gif-frame: not a GIF")
    w, h, flags, bg = struct.unpack("<HHBB", buf[6:12])
    p = 13
    gct = None
    if flags & 0x80:
        n = 3 << ((flags & 7) + 1)
        gct, p = buf[p:p + n], p + n
    canvas = bytearray(w * h * 3)
    disposal, transp = 0, None
    while p < len(buf):
        b = buf[p]
        p += 1
        if b == 0x3B:
            return
        if b == 0x21:
            label = buf[p]
            p += 1
            if label == 0xF9:
                disposal = (buf[p + 1] >> 2) & 7
                transp = buf[p + 4] if buf[p + 1] & 1 else None
            while buf[p]:
                p += buf[p] + 1
            p += 1
            continue
        if b != 0x2C:
            sys.exit(f"gif-frame: unexpected block 0x{b:02x}")
        x, y, fw, fh, fl = struct.unpack("<HHHHB", buf[p:p + 9])
        p += 9
        ct = gct
        if fl & 0x80:
            n = 3 << ((fl & 7) + 1)
            ct, p = buf[p:p + n], p + n
        min_size = buf[p]
        p += 1
        data = bytearray()
        while buf[p]:
            data += buf[p + 1:p + 1 + buf[p]]
            p += buf[p] + 1
        p += 1
        idx = lzw(bytes(data), min_size)
        for j in range(fh):
            for i in range(fw):
                k = j * fw + i
                if k >= len(idx) or idx[k] == transp:
                    continue
                o = ((y + j) * w + x + i) * 3
                canvas[o:o + 3] = ct[idx[k] * 3:idx[k] * 3 + 3]
        yield w, h, bytes(canvas)
        if disposal == 2:
            for j in range(fh):
                o = ((y + j) * w + x) * 3
                canvas[o:o + fw * 3] = bytes(fw * 3)
        disposal, transp = 0, None


def png(path, w, h, rgb):
    raw = b"".join(b"\0" + rgb[j * w * 3:(j + 1) * w * 3] for j in range(h))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    want = int(sys.argv[3]) if len(sys.argv) > 3 else -1
    all_frames = list(frames(open(sys.argv[1], "rb").read()))
    if not all_frames:
        sys.exit("gif-frame: no frames")
    w, h, rgb = all_frames[want]
    png(sys.argv[2], w, h, rgb)
    print(f"{sys.argv[2]}: frame {want % len(all_frames)} of {len(all_frames)}, {w}x{h}")


if __name__ == "__main__":
    main()
