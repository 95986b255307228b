#!/bin/sh
# Regenerate tests/data/quant/ from llama.cpp (the peer build) and gguf-py.
# Needs: the peer (make peer, or PEER=/path/to/build/peer) and Debian's python3-numpy.
# The unit tests only read the committed fixtures; they never need the peer.
set -e
cd "$(dirname "$0")/.."
exec /usr/bin/python3 tools/make-quant-fixtures.py tests/data/quant
