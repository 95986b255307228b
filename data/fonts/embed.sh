#!/bin/sh
# embed.sh: generate the built-in font's C source (psf_spleen.c) from data/fonts/spleen-8x16.psfu.
# The Makefile runs it at build time (into build/VARIANT/generated/): the output is never
# committed or edited. Run from the repository root: data/fonts/embed.sh OUT.c
set -eu
font=data/fonts/spleen-8x16.psfu
out=${1:?usage: data/fonts/embed.sh OUT.c}
{
  echo '/*'
  echo ' * psf_spleen: the built-in bitmap font, Spleen 8x16 (PSF1, 512 glyphs + Unicode table),'
  echo ' * generated at build time by data/fonts/embed.sh from data/fonts/spleen-8x16.psfu; do not edit.'
  echo ' *'
  echo ' * Spleen: Copyright (c) 2018-2020, Frederic Cambus. BSD-2-Clause; the full licence text is in'
  echo ' * data/fonts/LICENSE.spleen and must ship with binary distributions.'
  echo ' */'
  echo '#include <stddef.h>'
  echo '#include <stdint.h>'
  echo ''
  echo '#include "psf.h"'
  echo ''
  echo "const size_t psf_spleen_8x16_len = $(wc -c < "$font");"
  echo 'const uint8_t psf_spleen_8x16[] = {'
  od -An -v -tx1 "$font" | sed -e 's/^ *//' -e 's/ *$//' -e 's/\([0-9a-f][0-9a-f]\)/0x\1,/g' -e 's/^/    /'
  echo '};'
} > "$out"
echo "wrote $out"
