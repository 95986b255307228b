# unmask: diffusion language models, decoded live in the terminal.
#
#   make            build ./unmask (release: -O2 -g), CUDA backend too when nvcc is on PATH
#   make test       build and run every test; ends with "N passed, N failed"
#   make asan       run the tests on an ASan+UBSan build (build/asan/)
#   make tsan       run the tests on a ThreadSanitizer build (build/tsan/)
#   make werror     build every source with -Werror (build/werror/)
#   make check-layout  the layer folders include and call only downwards (docs/architecture.md)
#   make fuzz       libFuzzer on the GGUF reader for FUZZ_SECONDS (default 60)
#   make test-arm64 cross-build for AArch64 (build/arm64/) and run the tests under qemu-aarch64
#                   on three emulated CPUs (tools/test-arm64.sh; ARM64_QUICK=1: CI's subset)
#   make mutants    one-line bugs in the data and numeric checks (tests/mutants.txt): all caught?
#   make install    PREFIX=/usr/local: binary, man page, themes, models.conf, bundled model
#   make peer       build llama.cpp (the benchmark/correctness peer) under build/peer/
#
# Variants share sources; objects go to build/$(VARIANT)/. Missing Debian packages are
# installed with apt-get when running as root, else the exact command is printed.

# `make` alone builds `all` (rules above it in this file, such as the generated font, must not
# become the default goal)
.DEFAULT_GOAL := all

VERSION    := 0.1.0
VARIANT    ?= release
PREFIX     ?= /usr/local
CC         ?= cc
FUZZ_SECONDS ?= 60

BUILD      := build/$(VARIANT)
ifeq ($(VARIANT),release)
BIN        := unmask
else
BIN        := $(BUILD)/unmask
endif

PKG_CONFIG ?= pkg-config
# macOS (Homebrew): ncurses is keg-only, so its pkg-config files are not on the default path;
# -D_DARWIN_C_SOURCE keeps the BSD calls visible next to ncurses' -D_XOPEN_SOURCE.
HOST_OS := $(shell uname -s)
ifeq ($(HOST_OS),Darwin)
BREW_NCURSES := $(shell brew --prefix ncurses 2>/dev/null)
ifneq ($(BREW_NCURSES),)
PKG_CONFIG := PKG_CONFIG_PATH="$(BREW_NCURSES)/lib/pkgconfig:$$PKG_CONFIG_PATH" $(PKG_CONFIG)
endif
OS_CFLAGS := -D_DARWIN_C_SOURCE
endif
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags ncursesw libutf8proc 2>/dev/null)
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs ncursesw libutf8proc 2>/dev/null)

BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Wshadow -Wno-unused-parameter \
               -pthread -fno-strict-aliasing $(OS_CFLAGS) $(PKG_CFLAGS) \
               -DUM_VERSION='"$(VERSION)"' -DUM_VARIANT='"$(VARIANT)"' -DUM_PREFIX='"$(PREFIX)"'
LDLIBS      := $(PKG_LIBS) -lm -pthread

ifeq ($(VARIANT),asan)
BASE_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -O1
LDFLAGS     += -fsanitize=address,undefined
NO_CUDA     := 1
endif
ifeq ($(VARIANT),tsan)
BASE_CFLAGS += -fsanitize=thread -fno-omit-frame-pointer -O1
LDFLAGS     += -fsanitize=thread
NO_CUDA     := 1
endif
ifeq ($(VARIANT),werror)
BASE_CFLAGS += -Werror
endif
CFLAGS ?=
ALL_CFLAGS = $(BASE_CFLAGS) $(CFLAGS)

# Per-ISA kernel files are compiled for their ISA only; which one runs is chosen at run
# time from cpu_features(), so the binary still runs on an AVX2-only machine.
ISA_AVX2    := -mavx2 -mfma -mf16c -mbmi2
ISA_AVXVNNI := $(ISA_AVX2) -mavxvnni
ISA_AVX512  := $(ISA_AVX2) -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512bf16
ISA_AMX     := $(ISA_AVX512) -mamx-tile -mamx-int8 -mamx-bf16
# AArch64 (kernels/cpu/arch/arm): Advanced SIMD is baseline; the dot-product and int8 matrix
# multiply files get their extension, and run only where cpu_features() reports it.
ISA_DOTPROD := -march=armv8.2-a+dotprod
ISA_I8MM    := -march=armv8.2-a+dotprod+i8mm

# ---------------------------------------------------------------- layers
# The source folders, bottom to top (docs/architecture.md). A folder may include only from
# itself and the folders before it: each object is compiled with exactly those -I paths, so
# an upward include does not compile. `make check-layout` also checks the includes as text
# and the calls between objects (no cycles).
LAYERS := src/base src/format kernels/cpu src/model kernels/cuda src/decode src/eval src/record ui src/app
LAYER_N     := $(shell seq $(words $(LAYERS)))
layers_upto = $(strip $(foreach i,$(LAYER_N),$(if $(filter $(1),$(word $(i),$(LAYERS))),$(wordlist 1,$(i),$(LAYERS)))))
layer_inc   = $(addprefix -I,$(call layers_upto,$(1)))
ALL_INC     := $(addprefix -I,$(LAYERS))

# The built-in font is generated at build time from data/fonts/ (never edited by hand);
# it belongs to src/record.
GEN_DIR  := $(BUILD)/generated
GEN_SRC  := $(GEN_DIR)/psf_spleen.c
$(GEN_SRC): data/fonts/spleen-8x16.psfu data/fonts/embed.sh
	@mkdir -p $(dir $@)
	@data/fonts/embed.sh $@ >/dev/null
$(GEN_DIR)/psf_spleen.o: $(GEN_SRC)
	$(CC) $(ALL_CFLAGS) $(call layer_inc,src/record) -MMD -MP -c -o $@ $<

# The CPU kernels for the target's instruction sets: kernels/cpu/arch/$(KERNEL_ARCH)/ (x86 on
# x86-64; other targets build the portable kernels only). The target is the compiler's, so a
# cross compiler (CC=aarch64-linux-gnu-gcc) picks its own architecture's folder.
TARGET_MACHINE := $(shell $(CC) -dumpmachine 2>/dev/null)
KERNEL_ARCH    := $(if $(filter x86_64-% i686-% i386-%,$(TARGET_MACHINE)),x86,$(if $(filter aarch64-% arm64-%,$(TARGET_MACHINE)),arm,none))
ARCH_SRC := $(sort $(wildcard kernels/cpu/arch/$(KERNEL_ARCH)/*.c))
SRC_ALL  := $(sort $(foreach l,$(LAYERS),$(wildcard $(l)/*.c)) $(ARCH_SRC))
SRC_LIB  := $(filter-out src/app/main.c,$(SRC_ALL))
OBJ_LIB  := $(SRC_LIB:%.c=$(BUILD)/%.o) $(GEN_DIR)/psf_spleen.o
OBJ_MAIN := $(BUILD)/src/app/main.o
# Tests of one architecture's instructions (tests/test_*_avx2.c, tests/test_*_neon.c) are
# built only for that architecture, like its kernel folder.
ARCH_TEST_X86 := $(wildcard tests/test_*_avx2.c tests/test_*_avx512.c)
ARCH_TEST_ARM := $(wildcard tests/test_*_neon.c tests/test_*_dotprod.c tests/test_*_i8mm.c)
TEST_SRC := $(filter-out $(if $(filter x86,$(KERNEL_ARCH)),,$(ARCH_TEST_X86)) $(if $(filter arm,$(KERNEL_ARCH)),,$(ARCH_TEST_ARM)),\
              $(sort $(wildcard tests/test_*.c))) tests/harness.c
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
# The trainer (tools/train) sits above every layer; its library part is linked into the tests.
TRAIN_SRC := $(sort $(wildcard tools/train/*.c))
TRAIN_OBJ := $(TRAIN_SRC:%.c=$(BUILD)/%.o)
TRAIN_LIB := $(filter-out $(BUILD)/tools/train/main.o,$(TRAIN_OBJ))
UNIT     := $(BUILD)/unit_tests

# ---------------------------------------------------------------- CUDA (optional)
NVCC := $(shell command -v nvcc 2>/dev/null)
CU_SRC := $(sort $(wildcard kernels/cuda/*.cu))
ifeq ($(NO_CUDA),1)
NVCC :=
endif
ifneq ($(NVCC),)
CUDA_HOME  ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCHS ?= 80 86 89 90
NVCC_FLAGS := -O2 -g -std=c++17 $(call layer_inc,kernels/cuda) $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
              -Xcompiler -Wall,-fno-strict-aliasing
CU_OBJ     := $(CU_SRC:%.cu=$(BUILD)/%.o)
BASE_CFLAGS += -DUM_HAVE_CUDA=1
LDLIBS     += -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/targets/x86_64-linux/lib -lcudart -lstdc++ -Wl,-rpath,$(CUDA_HOME)/lib64
CUDA_NOTE  :=
else
CU_OBJ     :=
CUDA_NOTE  := nvcc not found (or sanitizer build): skipping the CUDA backend
endif

.PHONY: test-arm64 mutants check-layout print-inc print-libobjs run trainer sudoku-gen all deps test unit asan tsan werror fuzz fuzz-build install uninstall clean peer bench bench-gemm bench-rows check-peer demo-model sudoku-model sudoku-uniform-model plot gpu-check emu-check
# pkg-config runs when make reads this file, so on a fresh machine it runs before
# ensure-deps.sh has installed ncursesw/utf8proc: every target that compiles therefore
# installs first and then builds in a second make, which reads the flags afresh.
all: deps
	@$(MAKE) --no-print-directory $(BIN)
ifneq ($(CUDA_NOTE),)
	@echo "$(CUDA_NOTE)"
endif

deps:
	@tools/ensure-deps.sh build

$(BIN): $(OBJ_MAIN) $(OBJ_LIB) $(CU_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Each layer's objects see only their own and lower layers' headers; tests and tools see all.
define layer_rule
$$(BUILD)/$(1)/%.o: $(1)/%.c
	@mkdir -p $$(dir $$@)
	$$(CC) $$(ALL_CFLAGS) $(call layer_inc,$(1)) $$(ISA_FLAGS) -MMD -MP -c -o $$@ $$<
endef
$(foreach l,$(LAYERS),$(eval $(call layer_rule,$(l))))
$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_INC) -Itools/train $(ISA_FLAGS) -MMD -MP -c -o $@ $<
$(BUILD)/tools/%.o: tools/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_INC) $(ISA_FLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/%_avx2.o:    ISA_FLAGS = $(ISA_AVX2)
$(BUILD)/%_avxvnni.o: ISA_FLAGS = $(ISA_AVXVNNI)
$(BUILD)/%_avx512.o:  ISA_FLAGS = $(ISA_AVX512)
$(BUILD)/%_amx.o:     ISA_FLAGS = $(ISA_AMX)
$(BUILD)/%_dotprod.o: ISA_FLAGS = $(ISA_DOTPROD)
$(BUILD)/%_i8mm.o:    ISA_FLAGS = $(ISA_I8MM)

$(BUILD)/kernels/cuda/%.o: kernels/cuda/%.cu $(wildcard src/*/*.h kernels/*/*.h kernels/cuda/*.cuh)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -c -o $@ $<

$(UNIT): $(TEST_OBJ) $(TRAIN_LIB) $(OBJ_LIB) $(CU_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

-include $(OBJ_LIB:.o=.d) $(OBJ_MAIN:.o=.d) $(TEST_OBJ:.o=.d)

# The giflib tests compile their checks only where <gif_lib.h> exists (__has_include), and a
# header installed later is older than the objects (dpkg keeps the package's times): the
# stamp names whether it is there, so installing libgif-dev rebuilds them.
GIFLIB_STAMP := $(BUILD)/giflib-$(if $(wildcard /usr/include/gif_lib.h),yes,no).stamp
$(GIFLIB_STAMP):
	@mkdir -p $(dir $@) && rm -f $(BUILD)/giflib-*.stamp && touch $@
$(BUILD)/tests/test_gif.o $(BUILD)/tests/test_recorder.o: $(GIFLIB_STAMP)

# For scripts that build against the library (bench/gemm.sh, tests/gpu/*.sh): every layer's
# -I path, and the library objects of a variant (build them first).
print-inc:
	@echo $(ALL_INC)
print-libobjs:
	@echo $(OBJ_LIB) $(CU_OBJ)

# ---------------------------------------------------------------- tests
# One-way layer dependencies (tools/check-layout.py); tests/cli/layout.sh runs it in `make test`.
check-layout:
	@$(MAKE) --no-print-directory $(BIN)
	@python3 tools/check-layout.py --objs $(BUILD)

test: deps
	@tools/ensure-deps.sh test
	@$(MAKE) --no-print-directory $(BIN) $(UNIT) $(BUILD)/sudoku-gen $(BUILD)/unmask-train
	@UNMASK_BIN=$(BIN) UNMASK_UNIT=$(UNIT) UNMASK_VARIANT=$(VARIANT) SUDOKU_GEN=$(BUILD)/sudoku-gen \
	  UNMASK_TRAIN=$(BUILD)/unmask-train tests/run.sh

unit: deps
	@$(MAKE) --no-print-directory $(UNIT)
	@$(UNIT)

asan:
	@$(MAKE) --no-print-directory VARIANT=asan test

tsan:
	@$(MAKE) --no-print-directory VARIANT=tsan test

werror: deps
	@$(MAKE) --no-print-directory VARIANT=werror build/werror/unmask build/werror/unit_tests

# Each one-line bug of tests/mutants.txt applied to a copy of the tree (build/mutants/tree),
# built and run against the tests it names; every mutant must be caught (tools/mutants.sh).
mutants: deps
	@tools/mutants.sh

# ---------------------------------------------------------------- AArch64 under emulation
# The cross build (gcc-aarch64-linux-gnu, the arm64 multiarch libraries through their
# pkg-config files) and the x86 build it is compared with, then tools/test-arm64.sh.
ARM64_CC ?= aarch64-linux-gnu-gcc
test-arm64: deps
	@tools/ensure-deps.sh arm64
	@$(MAKE) --no-print-directory VARIANT=release unmask
	@PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig $(MAKE) --no-print-directory VARIANT=arm64 \
	  CC=$(ARM64_CC) NO_CUDA=1 build/arm64/unmask build/arm64/unit_tests build/arm64/sudoku-gen
	@ARM64_X86_BIN=$(CURDIR)/unmask tools/test-arm64.sh

# ---------------------------------------------------------------- fuzzing
FUZZ_DIR := build/fuzz
FUZZ_SRC := src/format/gguf.c src/base/util.c src/base/esc.c src/format/quant_types.c src/base/infile.c src/base/outfile.c
fuzz-build:
	@tools/ensure-deps.sh fuzz
	@mkdir -p $(FUZZ_DIR)
	clang -std=c11 -D_GNU_SOURCE -g -O1 -Isrc/base -Isrc/format -fsanitize=fuzzer,address,undefined \
	  -o $(FUZZ_DIR)/fuzz_gguf tests/fuzz/fuzz_gguf.c $(FUZZ_SRC) -lm -pthread

fuzz: fuzz-build
	@mkdir -p $(FUZZ_DIR)/corpus $(FUZZ_DIR)/crashes
	$(FUZZ_DIR)/fuzz_gguf -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -rss_limit_mb=2048 \
	  -timeout=10 -artifact_prefix=$(FUZZ_DIR)/crashes/ -print_final_stats=1 \
	  $(FUZZ_DIR)/corpus tests/fuzz/seeds

# ---------------------------------------------------------------- install
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/unmask/themes $(DESTDIR)$(PREFIX)/share/unmask/models \
	  $(DESTDIR)$(PREFIX)/share/doc/unmask
	install -m 644 LICENSE data/fonts/LICENSE.spleen $(DESTDIR)$(PREFIX)/share/doc/unmask/
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/unmask
	install -m 644 docs/unmask.1 $(DESTDIR)$(PREFIX)/share/man/man1/unmask.1
	install -m 644 models.conf $(DESTDIR)$(PREFIX)/share/unmask/models.conf
	@for f in themes/*.theme; do [ -e "$$f" ] && install -m 644 "$$f" $(DESTDIR)$(PREFIX)/share/unmask/themes/ || true; done
	@for f in models/*.gguf; do [ -e "$$f" ] && install -m 644 "$$f" $(DESTDIR)$(PREFIX)/share/unmask/models/ || true; done

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/unmask $(DESTDIR)$(PREFIX)/share/man/man1/unmask.1
	rm -rf $(DESTDIR)$(PREFIX)/share/unmask

# ---------------------------------------------------------------- peer and benchmarks
peer:
	@tools/build-peer.sh

clean:
	rm -rf build/release build/asan build/tsan build/werror build/arm64 build/fuzz unmask

check-peer: all
	@tools/check-peer.sh
	@tools/check-peer-bundled.sh

# The main job: the visualizer on the bundled demo model (models/unmask-demo.gguf).
run: all
	./unmask

# The demo model's trainer (tools/train) and the from-scratch recipe (models/README.md).
$(BUILD)/unmask-train: $(TRAIN_OBJ) $(OBJ_LIB) $(CU_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
trainer: deps
	@$(MAKE) --no-print-directory $(BUILD)/unmask-train
-include $(TRAIN_OBJ:.o=.d)

demo-model:
	@tools/make-demo-model.sh

# The sudoku data generator (tools/sudoku, docs/eval.md): plain C, no libraries beyond libc.
SUDOKU_GEN_OBJ := $(BUILD)/tools/sudoku/gen.o $(BUILD)/src/eval/sudoku.o $(BUILD)/src/eval/tasks.o \
                  $(BUILD)/src/base/jsonr.o $(BUILD)/src/base/infile.o $(BUILD)/src/base/numparse.o \
                  $(BUILD)/src/base/util.o $(BUILD)/src/base/esc.o
$(BUILD)/sudoku-gen: $(SUDOKU_GEN_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ -lm -pthread
sudoku-gen:
	@$(MAKE) --no-print-directory $(BUILD)/sudoku-gen
-include $(SUDOKU_GEN_OBJ:.o=.d)

# The sudoku model (models/unmask-sudoku.gguf, docs/sudoku.md): data from sudoku-gen, the same trainer.
sudoku-model:
	@tools/make-sudoku-model.sh

sudoku-uniform-model:
	@tools/make-sudoku-uniform.sh

# docs/fast-decoding.png from bench/results/sudoku-eval.json and demo-quality.json (gnuplot)
plot:
	@tools/ensure-deps.sh plot
	@bench/plot_quality.sh

# Benchmarks against llama.cpp (see bench/README.md). BENCH_MODELS is a list of NAME:SHAPE.
BENCH_ROUNDS ?= 3
bench: all
	@tools/bench.sh $(BENCH_ROUNDS)

bench-gemm:
	@bench/gemm.sh

# Weight products over 16-64 rows against the int8 peak and the stream-read bandwidth
# (bench/rows.py; ROWS_NOTE: what else ran on the machine, recorded in the result).
bench-rows:
	@python3 bench/rows.py --note "$(ROWS_NOTE)"

# CUDA backend checks (docs/cuda.md): every kernel against the CPU reference, whole forward
# passes and a generation against the CPU backend, then a benchmark. Needs an NVIDIA GPU;
# without one it says so and exits 0. emu-check runs the backend's host code under ASan with
# a CPU stand-in for the CUDA runtime (no GPU needed).
gpu-check:
	@CUDA_ARCHS="$(CUDA_ARCHS)" tests/gpu/gpu-check.sh

emu-check:
	@tests/gpu/emu-check.sh
