#!/usr/bin/env python3
"""check-layout: the source folders keep their one-way dependencies (docs/architecture.md).

Two checks, each naming the files at fault:
  includes  every #include "x.h" in a layer folder resolves to a header of the same folder
            or of a layer below it (the order is the Makefile's LAYERS line); a header name
            that exists in two folders is an error too, since -I order would pick one silently.
  objects   from the compiled objects' symbols (nm): no object calls into a layer above its
            own, and no two or more objects call each other in a cycle (for example a kernel
            calling back into the dispatcher that calls it). An instruction-set file in an
            architecture folder (LAYER/arch/A/NAME.c) calls no other instruction-set file: only
            its folder's shared layer (A_shared*.c) and the files outside arch/.
  sizes     no hand-written C, C++ or CUDA file (layers, tests, tools, bench) over 900 lines:
            a file that large is a grab-bag to split by job. Generated sources are made at
            build time (build/VARIANT/generated/) and are not in the tree.

usage: tools/check-layout.py [--root DIR] [--objs DIR] [--skip-objects]
  --root  the source tree (default: the repository this script is in)
  --objs  the object folder (default: ROOT/build/release); it must hold a full build
Exit status 0 when both checks pass, 1 with one line per problem otherwise.
"""
import argparse
import os
import re
import subprocess
import sys

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE_EXT = ('.c', '.h', '.cu', '.cuh')
# generated sources live in the build folder; the layer each belongs to
GENERATED = {'generated': 'src/record'}


def read_layers(root):
    text = open(os.path.join(root, 'Makefile')).read()
    m = re.search(r'^LAYERS\s*:=\s*(.+)$', text, re.M)
    if not m:
        sys.exit('check-layout: no LAYERS line in the Makefile')
    return m.group(1).split()


def layer_dirs(root, layer):
    """A layer's folder and its architecture folders (LAYER/arch/A), which belong to it."""
    dirs = [layer]
    arch = os.path.join(root, layer, 'arch')
    if os.path.isdir(arch):
        dirs += [os.path.join(layer, 'arch', a) for a in sorted(os.listdir(arch))
                 if os.path.isdir(os.path.join(arch, a))]
    return dirs


def layer_files(root, layer):
    """(folder, file name) of every file of a layer, its architecture folders included."""
    return [(d, f) for d in layer_dirs(root, layer) for f in sorted(os.listdir(os.path.join(root, d)))
            if os.path.isfile(os.path.join(root, d, f))]


def check_includes(root, layers):
    problems = []
    rank = {l: i for i, l in enumerate(layers)}
    where = {}                                     # header name -> layer
    for l in layers:
        for d, f in layer_files(root, l):
            if f.endswith(('.h', '.cuh')):
                if f in where:
                    problems.append(f'{d}/{f}: header name also in {where[f]}/ (ambiguous include)')
                where.setdefault(f, l)
    for l in layers:
        allowed = layers[:rank[l] + 1]
        for d, f in layer_files(root, l):
            if not f.endswith(SOURCE_EXT):
                continue
            path = os.path.join(d, f)
            text = open(os.path.join(root, path), errors='replace').read()
            for m in INCLUDE_RE.finditer(text):
                name = m.group(1)
                line = text.count('\n', 0, m.start()) + 1
                base = os.path.basename(name)
                if '/' in name:
                    problems.append(f'{path}:{line}: includes "{name}" by a path; name the header alone')
                elif base not in where:
                    problems.append(f'{path}:{line}: includes "{name}", which is in no layer folder')
                elif where[base] not in allowed:
                    problems.append(f'{path}:{line}: includes "{name}" from {where[base]}, a layer above '
                                    f'{l} (it may include from: {", ".join(allowed)})')
    return problems


MAX_LINES = 900
SIZE_DIRS = ('tests', 'tools', 'bench')


def check_sizes(root, layers):
    problems = []
    for top in list(layers) + list(SIZE_DIRS):
        for dirpath, dirs, names in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if d not in ('data', 'node_modules')]
            for n in sorted(names):
                if n.endswith(SOURCE_EXT + ('.cpp',)):
                    path = os.path.join(dirpath, n)
                    with open(path, errors='replace') as f:
                        lines = sum(1 for _ in f)
                    if lines > MAX_LINES:
                        problems.append(f'{os.path.relpath(path, root)}: {lines} lines, over {MAX_LINES}: split it by job')
    return problems


def nm(obj, flags):
    out = subprocess.run(['nm', '-P'] + flags + [obj], capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def object_layer(rel, layers):
    folder = os.path.dirname(rel)
    if folder in layers:
        return folder
    parts = folder.split('/')
    if len(parts) >= 3 and parts[-2] == 'arch' and '/'.join(parts[:-2]) in layers:
        return '/'.join(parts[:-2])
    return GENERATED.get(folder)


def isa_file(rel):
    """The architecture folder of an instruction-set object (LAYER/arch/A/NAME.o, NAME not
    A_shared*), else None: shared objects and objects outside arch/ are not ISA files."""
    parts = rel.split('/')
    if len(parts) >= 4 and parts[-3] == 'arch' and not parts[-1].startswith(parts[-2] + '_shared'):
        return parts[-2]
    return None


def has_source(root, rel):
    stem = rel[:-2]
    return os.path.dirname(rel) in GENERATED or any(os.path.exists(os.path.join(root, stem + e)) for e in ('.c', '.cu'))


def check_objects(root, objs, layers):
    problems = []
    rank = {l: i for i, l in enumerate(layers)}
    files = []
    for dirpath, _, names in os.walk(objs):
        for n in names:
            if n.endswith('.o'):
                rel = os.path.relpath(os.path.join(dirpath, n), objs)
                if object_layer(rel, layers) and has_source(root, rel):   # not a moved file's old object
                    files.append(rel)
    if not files:
        return [f'{objs}: no objects of the layer folders (build first: make)']
    owner, uses = {}, {}
    for rel in sorted(files):
        path = os.path.join(objs, rel)
        for parts in nm(path, ['--defined-only']):
            if len(parts) >= 2 and parts[1] in 'TDBRVWGS':
                owner.setdefault(parts[0], rel)
        uses[rel] = {p[0] for p in nm(path, ['-u']) if p}
    graph = {rel: {} for rel in files}
    for rel, syms in uses.items():
        for s in syms:
            o = owner.get(s)
            if o and o != rel:
                graph[rel].setdefault(o, s)
    for a in sorted(graph):
        for b, sym in sorted(graph[a].items()):
            la, lb = object_layer(a, layers), object_layer(b, layers)
            if rank[lb] > rank[la]:
                problems.append(f'{a} calls {sym} in {b}: {lb} is a layer above {la}')
            if isa_file(a) and isa_file(b):
                problems.append(f'{a} calls {sym} in {b} sideways: an instruction-set file calls only '
                                f'the shared layer (arch/{isa_file(a)}/{isa_file(a)}_shared*.c, the files outside arch/)')
    # cycles: strongly connected components of more than one object (Tarjan, iterative)
    index, low, on, stack, sccs, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]; counter[0] += 1
        stack.append(start); on.add(start)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]; counter[0] += 1
                    stack.append(nxt); on.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    sccs.append(sorted(comp))
    for comp in sccs:
        members = set(comp)
        edges = [f'{a} -> {b} ({graph[a][b]})' for a in comp for b in sorted(graph[a]) if b in members]
        problems.append('cycle between objects: ' + '; '.join(edges))
    return problems


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description='check the one-way layer dependencies')
    ap.add_argument('--root', default=here)
    ap.add_argument('--objs')
    ap.add_argument('--skip-objects', action='store_true')
    a = ap.parse_args()
    layers = read_layers(a.root)
    problems = check_includes(a.root, layers) + check_sizes(a.root, layers)
    if not a.skip_objects:
        problems += check_objects(a.root, a.objs or os.path.join(a.root, 'build', 'release'), layers)
    for p in problems:
        print('check-layout: ' + p)
    if problems:
        print(f'check-layout: {len(problems)} problem(s)')
        return 1
    print(f'check-layout: {len(layers)} layers, includes and object calls one-way, no cycles, no file over {MAX_LINES} lines')
    return 0


if __name__ == '__main__':
    sys.exit(main())
