"""benchinfo.py: the facts every benchmark result records about where it ran (imported by
bench/forward.sh and bench/e2e.sh)."""
import os
import subprocess
import time


def machine():
    flags = open("/proc/cpuinfo").read().split("\nflags")[1].split("\n")[0].split(":")[1].split()
    return {"cpu": [l.split(":")[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")][0],
            "cores": os.cpu_count(), "flags": [f for f in flags if f.startswith(("avx", "amx", "fma", "f16c"))]}


def header():
    return {
        "machine": machine(),
        "load_avg_at_end": open("/proc/loadavg").read().split()[:3],
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "peer": "llama.cpp " + open("build/peer/VERSION").read().strip() + " (node-llama-cpp@3.21.1), AMX off",
        "unmask": subprocess.run(["./unmask", "--version"], capture_output=True, text=True).stdout.splitlines()[0],
    }
