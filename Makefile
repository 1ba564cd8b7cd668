# SenseAlign build. `make` builds everything into bin/; CUDA is used when the toolkit is found
# (CUDA_HOME, default /usr/local/cuda); `make CUDA=0` builds CPU-only. `make test`, `make bench`.

CUDA_HOME ?= /usr/local/cuda
CUDNN_HOME ?= $(CUDA_HOME)
ifeq ($(origin CUDA), undefined)
  CUDA := $(if $(wildcard $(CUDA_HOME)/bin/nvcc),1,0)
endif
# cuDNN: under CUDA_HOME, or else pip's nvidia-cudnn package (how GPU machines with a Python stack
# ship it). Its library may lack the unversioned libcudnn.so, so we link the file itself.
ifeq ($(CUDA),1)
  ifeq ($(wildcard $(CUDNN_HOME)/include/cudnn.h),)
    PIP_CUDNN := $(shell python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null)
    CUDNN_HOME := $(if $(PIP_CUDNN),$(PIP_CUDNN),$(CUDNN_HOME))
  endif
endif
CUDNN_SO := $(firstword $(wildcard $(addprefix $(CUDNN_HOME)/,lib64/libcudnn.so lib/libcudnn.so lib64/libcudnn.so.9 lib/libcudnn.so.9)))
CUDNN := $(if $(and $(filter 1,$(CUDA)),$(wildcard $(CUDNN_HOME)/include/cudnn.h),$(CUDNN_SO)),1,0)
# Hopper (H100/H200) by default; override with e.g. CUDA_ARCH="-gencode arch=compute_80,code=sm_80".
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90

CXX ?= g++
BUILD := build
# -fno-trapping-math lets GCC vectorize loops with float compares; FP exception flags are never read.
# -fno-math-errno lets it vectorize sqrt (the optimizers' updates); errno is never read after math.
OPT ?= -O3 -march=x86-64-v3
# -fPIC: the same objects link into the tools and into the Python module (a shared object).
# Line tables only (-g1): backtraces, profiles and sanitizer reports keep file and line, and the build
# takes about 30% less than with full debug information; `make DEBUG=-g` for a debugger's variables.
DEBUG ?= -g1
CXXFLAGS := -std=c++20 $(OPT) -fno-trapping-math -fno-math-errno -fPIC $(DEBUG) -fopenmp -Wall -Wextra -Wno-unused-parameter -I. -I/usr/include/hdf5/serial -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1 -MMD -MP $(EXTRA_CXXFLAGS)
# OpenBLAS's OpenMP build: BLAS and our OpenMP loops share one thread pool. With the pthread
# build the two pools spin against each other on small machines (2.5x slower training here).
BLAS_DIR ?= /usr/lib/x86_64-linux-gnu/openblas-openmp
# SANITIZE=address,undefined (make sanitize): instrumented objects and links; any finding aborts.
ifneq ($(SANITIZE),)
  CXXFLAGS += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer
  SAN_LDFLAGS := -fsanitize=$(SANITIZE)
endif
LDLIBS := $(SAN_LDFLAGS) -L$(BLAS_DIR) -Wl,-rpath,$(BLAS_DIR) -lopenblas -lfmt -lhdf5_serial -ltomlplusplus -lpugixml -lutf8proc -fopenmp -lpthread
NVCCFLAGS := -std=c++20 -O3 -I. $(CUDA_ARCH) -Xcompiler -fopenmp,-fPIC --expt-relaxed-constexpr -MMD -MP

ENGINE_SRC := engine/backend.cpp engine/replay_audit.cpp engine/step_replay.cpp $(wildcard engine/core/*.cpp engine/ops/*.cpp engine/cpu/*.cpp engine/optim/*.cpp) engine/dist/tensor_collectives.cpp \
  engine/dist/nccl_library.cpp
# MPI (data-parallel training, `mpirun -np N ./bin/train`) when OpenMPI's compiler wrapper is found;
# `make MPI=0` builds single-process binaries. Only engine/dist/mpi_communicator.cpp sees mpi.h.
ifeq ($(origin MPI), undefined)
  MPI := $(if $(shell command -v mpicxx 2>/dev/null),1,0)
endif
ifeq ($(MPI),1)
  ENGINE_SRC += engine/dist/mpi_communicator.cpp
  MPI_CXXFLAGS := $(shell mpicxx --showme:compile)
  LDLIBS += $(filter-out -lmpi_cxx,$(shell mpicxx --showme:link))
else
  ENGINE_SRC += engine/dist/single_process.cpp
endif
ifeq ($(CUDA),1)
  CUDA_SRC := $(wildcard engine/cuda/*.cu)
  CUDNN_SRC := $(if $(filter 1,$(CUDNN)),$(wildcard engine/cuda/cudnn_*.cpp))
  CXXFLAGS += -DSA_CUDA=1
  LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lcublas
  ifeq ($(CUDNN),1)
    CXXFLAGS += -DSA_CUDNN=1
    NVCCFLAGS += -DSA_CUDNN=1
    LDLIBS += $(CUDNN_SO) -Wl,-rpath,$(dir $(CUDNN_SO))
  endif
else
  ENGINE_SRC += engine/cuda/cuda_stub.cpp
endif
# NCCL (data-parallel GPU ranks) when the toolkit has its header; the library is opened at run time.
NCCL := $(if $(and $(filter 1,$(CUDA)),$(wildcard $(CUDA_HOME)/include/nccl.h)),1,0)
ifeq ($(NCCL),1)
  NCCL_SRC := engine/cuda/nccl_allreduce.cpp
else
  ENGINE_SRC += engine/dist/nccl_stub.cpp
endif

LIB_SRC := $(ENGINE_SRC) $(wildcard layers/*.cpp sense/*.cpp train/*.cpp data/*.cpp eval/*.cpp)
LIB_OBJ := $(LIB_SRC:%.cpp=$(BUILD)/%.o) $(CUDA_SRC:%.cu=$(BUILD)/%.cu.o) $(CUDNN_SRC:%.cpp=$(BUILD)/%.cudnn.o) \
  $(NCCL_SRC:%.cpp=$(BUILD)/%.cuda.o)
# The library as one shared object (the default), which the tools, the tests and the Python module
# find in ../lib beside bin/ (the GPU bundle) or in ../$(BUILD) (the tree they were built in): one
# copy of the engine and its kernels instead of one per tool, and links of seconds. SHARED=0: a
# static archive (the fuzz driver, which takes only the objects its readers reach).
SHARED ?= 1
ifeq ($(SHARED),1)
  LIB := $(BUILD)/libsensealign.so
  LDLIBS := -Wl,-rpath,'$$ORIGIN/../lib:$$ORIGIN/../$(BUILD)' $(LDLIBS)
  # Calls between the library's own functions stay direct and inlinable, as in the static link.
  CXXFLAGS += -fno-semantic-interposition
else
  LIB := $(BUILD)/libsensealign.a
endif

# Each module's command-line tools live in MODULE/tools/NAME.cpp and build to bin/NAME.
TOOL_SRC := $(filter-out tests/%,$(wildcard */tools/*.cpp))
TOOLS := $(addprefix bin/,$(notdir $(TOOL_SRC:.cpp=)))
TEST_SRC := $(wildcard tests/*.cpp tests/*/*.cpp)
TEST_OBJ := $(TEST_SRC:%.cpp=$(BUILD)/%.o)
# Tests are filed by the module they test; `make unit` runs the modules' own tests (no training
# runs of train/, no tools of tools/), in well under a minute on 2 cores.
UNIT_SRC := $(wildcard tests/*.cpp $(foreach m,engine data layers sense eval,tests/$(m)/*.cpp))
UNIT_OBJ := $(UNIT_SRC:%.cpp=$(BUILD)/%.o)

.PHONY: all test unit python wheel bench clean deps corpus quickstart gpu-report gpu-bundle sanitize fuzz peers peers-check
all: $(TOOLS) bin/tests bin/fault_inject.so

# Debian packages the build, the tests and the default corpus need; `make deps` installs the
# missing ones (with sudo when not root).
DEB_PACKAGES := g++ make python3 python3-dev python3-venv pybind11-dev python3-pybind11 python3-numpy python3-pytest python3-h5py libopenblas-openmp-dev libfmt-dev libgtest-dev libcli11-dev libhdf5-dev \
  nlohmann-json3-dev libtomlplusplus-dev debian-handbook \
  wordnet-base wordnet-sense-index libpugixml-dev edict trans-de-en man-db manpages-de libutf8proc-dev \
  libopenmpi-dev openmpi-bin
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then echo "installing:" $$missing; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	else echo "all Debian packages present"; fi

# The small real default corpus: Debian's handbook (English), one sentence per line.
CORPUS := build/corpus/handbook-en.train.txt build/corpus/handbook-en.heldout.txt
corpus: $(CORPUS)
$(CORPUS) &:
	@mkdir -p build/corpus
	python3 data/scripts/handbook_corpus.py $(CORPUS)

# Only what it runs: the trainer (and bin/embed, which reads its result), not the tests.
quickstart: deps
	$(MAKE) -j$$(nproc) bin/train bin/embed corpus
	./bin/train configs/quickstart.cfg

# The CUDA flag set is part of every object: rebuild when it changes. (MPI changes only which
# engine/dist file is built, and the link.)
comma := ,
FLAGS_STAMP := $(BUILD)/.flags-cuda$(CUDA)-pic$(if $(SANITIZE),-san-$(subst $(comma),-,$(SANITIZE))-$(notdir $(CXX)))-shared$(SHARED)
$(FLAGS_STAMP):
	@mkdir -p $(BUILD) && rm -f $(BUILD)/.cuda-* $(BUILD)/.flags-* && touch $@

$(BUILD)/engine/dist/mpi_communicator.o: CXXFLAGS += $(MPI_CXXFLAGS)
$(BUILD)/%.o: %.cpp $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

# cuDNN headers are slow to compile: cuDNN code lives in its own translation units.
$(BUILD)/%.cudnn.o: %.cpp $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -I$(CUDA_HOME)/include -I$(CUDNN_HOME)/include -c $< -o $@

# C++ that includes CUDA toolkit headers (NCCL's) but no kernels.
$(BUILD)/%.cuda.o: %.cpp $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -I$(CUDA_HOME)/include -c $< -o $@

$(BUILD)/%.cu.o: %.cu $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CUDA_HOME)/bin/nvcc $(NVCCFLAGS) -c $< -o $@

ifeq ($(SHARED),1)
$(LIB): $(LIB_OBJ)
	$(CXX) -shared -Wl,-soname,libsensealign.so -o $@ $^ $(LDLIBS)
else
$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^
endif

define tool_rule
bin/$(notdir $(1:.cpp=)): $(BUILD)/$(1:.cpp=.o) $(LIB)
	@mkdir -p bin
	$$(CXX) -o $$@ $$< $(LIB) $$(LDLIBS)
endef
$(foreach t,$(TOOL_SRC),$(eval $(call tool_rule,$(t))))

bin/tests: $(TEST_OBJ) $(LIB)
	@mkdir -p bin
	$(CXX) -o $@ $(TEST_OBJ) $(LIB) $(LDLIBS) -lgtest

bin/unit_tests: $(UNIT_OBJ) $(LIB)
	@mkdir -p bin
	$(CXX) -o $@ $(UNIT_OBJ) $(LIB) $(LDLIBS) -lgtest

# The Python package (eval/python): bin/sensealign/, its compiled core _core<suffix>.so beside the
# package's .py files, imported with bin/ on PYTHONPATH (or installed by `pip install .`).
# Debian's interpreter, whose packages (pybind11, numpy, pytest, h5py) make deps installs.
PYTHON ?= /usr/bin/python3
PY_SUFFIX := $(shell $(PYTHON) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))" 2>/dev/null)
PY_MODULE := bin/sensealign/_core$(PY_SUFFIX)
PY_FILES := $(addprefix bin/sensealign/,$(notdir $(wildcard eval/python/sensealign/*.py)))
$(BUILD)/eval/python/%.o: CXXFLAGS += $(shell $(PYTHON) -m pybind11 --includes 2>/dev/null)
python: $(PY_MODULE) $(PY_FILES)
# The core finds libsensealign.so beside itself (a wheel) or in the tree it was built in.
$(PY_MODULE): $(BUILD)/eval/python/sensealign_module.o $(LIB)
	@mkdir -p $(dir $@) && rm -f bin/sensealign$(PY_SUFFIX)
	$(CXX) -shared -o $@ $< $(LIB) -Wl,-rpath,'$$ORIGIN:$$ORIGIN/../../$(BUILD)' $(LDLIBS)
bin/sensealign/%.py: eval/python/sensealign/%.py
	@mkdir -p $(dir $@)
	cp $< $@
# A wheel of the package for this machine's Python 3.11 (pip install dist/sensealign-*.whl); `pip
# install .` does the same through pyproject.toml.
wheel:
	python3 eval/python/build_backend.py dist

# The fault-injection tests' LD_PRELOAD shim (kills at a chosen rename or write).
bin/fault_inject.so: tests/fault_inject.c
	@mkdir -p bin
	$(CC) -shared -fPIC -O2 -o $@ $< -ldl

# Some tests run the tools (bin/embed, bin/train): build everything first.
# The GoogleTest suites, then the Python module's pytest suite; one closing line for both.
test:
	$(MAKE) -j$$(nproc) all python
	tests/run_all.sh

# A few of the eval tests run bin/align: the tools are built too.
unit:
	$(MAKE) -j$$(nproc) all bin/unit_tests
	./bin/unit_tests

# The suite under AddressSanitizer and UBSan (tests/sanitize/run.sh: its own tree in build-san/).
sanitize:
	tests/sanitize/run.sh

# The readers fuzzed with clang's libFuzzer under ASan and UBSan, FUZZ_S seconds each
# (tests/fuzz/run.sh; built into build-fuzz/). FUZZ_TARGETS picks some (default: all).
FUZZ_S ?= 60
FUZZ_OBJ := $(BUILD)/tests/fuzz/fuzz_targets.o $(BUILD)/tests/fuzz/driver/fuzz_main.o
$(BUILD)/fuzz: $(FUZZ_OBJ) $(LIB)
	$(CXX) -fsanitize=fuzzer -o $@ $(FUZZ_OBJ) $(LIB) $(LDLIBS)
# clang with libFuzzer's runtime and OpenMP: installed by `make fuzz` when missing.
FUZZ_PACKAGES := clang libclang-rt-14-dev libomp-dev
fuzz:
	$(MAKE) deps DEB_PACKAGES="$(FUZZ_PACKAGES)"
	FUZZ_S=$(FUZZ_S) tests/fuzz/run.sh $(FUZZ_TARGETS)

# The reference implementations (bilm-tf on TensorFlow, PyTorch and transformers, Flair), pinned in
# eval/peers/*.txt, each in a virtual environment under build/peers/ from PyPI; nothing else needs
# them. peers-check compares our models with them (eval/peers/check.sh), one line per check.
peers:
	$(MAKE) deps DEB_PACKAGES="python3-venv"
	eval/peers/install.sh
peers-check:
	$(MAKE) -j$$(nproc) all python
	eval/peers/check.sh

bench:
	$(MAKE) -j$$(nproc) bin/bench
	./bin/bench ops
	./bin/bench train --config configs/bench-small.cfg --corpus ../shared/data/corpus/brown.txt --steps 40

# On a machine with a GPU: every test (the GPU ones run there), the CUDA benchmarks, and training
# tokens/s on bench-small and on the paper's elmo.cfg with cuDNN's LSTM and with the step kernels.
# The logs go to REPORT. GPU_CORPUS must exist there (../shared does not travel to a lent GPU).
REPORT ?= gpu-report
GPU_CORPUS ?= ../shared/data/corpus/brown.txt
GPU_STEPS ?= 20
# Each step of the report is stopped after STEP_TIMEOUT seconds, so that one hang leaves the rest.
STEP_TIMEOUT ?= 600
STEP := timeout $(STEP_TIMEOUT)
# PREBUILT=1 reports on bin/ as it is (a GPU machine without the build's Debian packages).
gpu-report:
ifneq ($(PREBUILT),1)
	$(MAKE) -j$$(nproc) all
endif
	@mkdir -p $(REPORT)
	-$(STEP) ./bin/tests 2>&1 | tee $(REPORT)/tests.log | tail -3
	-if command -v compute-sanitizer >/dev/null; then for tool in memcheck racecheck; do $(STEP) compute-sanitizer --tool $$tool \
	  --error-exitcode 3 ./bin/tests --gtest_filter='CudaOps*:*Cuda*:*Gpu*' 2>&1 | tee -a $(REPORT)/sanitizer.log | tail -3; \
	  grep -q "Device not supported" $(REPORT)/sanitizer.log && { echo "compute-sanitizer: skipped (Device not supported)"; break; }; done; \
	  else echo "compute-sanitizer: skipped (not on PATH)"; fi
	-$(STEP) ./bin/bench ops --device cuda 2>&1 | tee $(REPORT)/bench-ops.log
	-$(STEP) ./bin/bench train --config configs/bench-small.cfg --corpus $(GPU_CORPUS) --device cuda --steps 40 --peer "" \
	  2>&1 | tee $(REPORT)/train-bench-small.log
	-$(STEP) ./bin/bench train --config configs/saelmo-small.cfg --corpus $(GPU_CORPUS) --device cuda --steps 40 --peer "" \
	  --set contextual_warmup=2 2>&1 | tee $(REPORT)/train-saelmo-small.log
	-for path in on off; do $(STEP) ./bin/bench train --config configs/elmo.cfg --corpus $(GPU_CORPUS) --device cuda \
	  --steps $(GPU_STEPS) --peer "" --set lstm.cudnn=$$path 2>&1 | tee $(REPORT)/train-elmo-cudnn-$$path.log; done

# What a GPU machine without our Debian packages needs, in one folder to carry (README, "On a GPU
# machine"): the tools built MPI=0 on one shared engine library (in build-bundle/), stripped, the
# libraries the machine lacks, the data the report and experiment read; then each binary is started
# with only the bundle's libraries on its path.
BUNDLE ?= .gpu
gpu-bundle:
	tests/gpu/make_bundle.sh $(BUNDLE)

clean:
	rm -rf $(BUILD) bin dist build-san build-fuzz build-bundle

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
