# SenseAlign build. `make` builds everything into bin/; CUDA is used when the toolkit is found
# (CUDA_HOME, default /usr/local/cuda); `make CUDA=0` builds CPU-only. `make test`, `make bench`.

CUDA_HOME ?= /usr/local/cuda
CUDNN_HOME ?= $(CUDA_HOME)
ifeq ($(origin CUDA), undefined)
  CUDA := $(if $(wildcard $(CUDA_HOME)/bin/nvcc),1,0)
endif
CUDNN := $(if $(and $(filter 1,$(CUDA)),$(wildcard $(CUDNN_HOME)/include/cudnn.h)),1,0)
# Hopper (H100/H200) by default; override with e.g. CUDA_ARCH="-gencode arch=compute_80,code=sm_80".
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90

CXX ?= g++
BUILD := build
OPT ?= -O3 -march=x86-64-v3
CXXFLAGS := -std=c++20 $(OPT) -g -fopenmp -Wall -Wextra -Wno-unused-parameter -I. -MMD -MP $(EXTRA_CXXFLAGS)
LDLIBS := -lopenblas -lfmt -fopenmp -lpthread
NVCCFLAGS := -std=c++20 -O3 -I. $(CUDA_ARCH) -Xcompiler -fopenmp --expt-relaxed-constexpr -MMD -MP

ENGINE_SRC := $(wildcard engine/core/*.cpp engine/ops/*.cpp engine/cpu/*.cpp)
ifeq ($(CUDA),1)
  CUDA_SRC := $(wildcard engine/cuda/*.cu)
  CUDNN_SRC := $(if $(filter 1,$(CUDNN)),$(wildcard engine/cuda/cudnn_*.cpp))
  CXXFLAGS += -DSA_CUDA=1
  LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lcublas
  ifeq ($(CUDNN),1)
    CXXFLAGS += -DSA_CUDNN=1
    NVCCFLAGS += -DSA_CUDNN=1
    LDLIBS += -L$(CUDNN_HOME)/lib64 -Wl,-rpath,$(CUDNN_HOME)/lib64 -lcudnn
  endif
else
  ENGINE_SRC += engine/cuda/cuda_stub.cpp
endif

LIB_SRC := $(ENGINE_SRC) $(wildcard layers/*.cpp sense/*.cpp train/*.cpp data/*.cpp eval/*.cpp)
LIB_OBJ := $(LIB_SRC:%.cpp=$(BUILD)/%.o) $(CUDA_SRC:%.cu=$(BUILD)/%.cu.o) $(CUDNN_SRC:%.cpp=$(BUILD)/%.cudnn.o)
LIB := $(BUILD)/libsensealign.a

TOOLS := $(patsubst tools/%.cpp,bin/%,$(wildcard tools/*.cpp))
TEST_SRC := $(wildcard tests/*.cpp)
TEST_OBJ := $(TEST_SRC:%.cpp=$(BUILD)/%.o)

.PHONY: all test bench clean
all: $(TOOLS) bin/tests

# The CUDA flag set is part of every object: rebuild when it changes.
$(BUILD)/.cuda-$(CUDA):
	@mkdir -p $(BUILD) && rm -f $(BUILD)/.cuda-* && touch $@

$(BUILD)/%.o: %.cpp $(BUILD)/.cuda-$(CUDA)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

# cuDNN headers are slow to compile: cuDNN code lives in its own translation units.
$(BUILD)/%.cudnn.o: %.cpp $(BUILD)/.cuda-$(CUDA)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -I$(CUDA_HOME)/include -I$(CUDNN_HOME)/include -c $< -o $@

$(BUILD)/%.cu.o: %.cu $(BUILD)/.cuda-$(CUDA)
	@mkdir -p $(dir $@)
	$(CUDA_HOME)/bin/nvcc $(NVCCFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

bin/%: $(BUILD)/tools/%.o $(LIB)
	@mkdir -p bin
	$(CXX) -o $@ $< $(LIB) $(LDLIBS)

bin/tests: $(TEST_OBJ) $(LIB)
	@mkdir -p bin
	$(CXX) -o $@ $(TEST_OBJ) $(LIB) $(LDLIBS) -lgtest -lgtest_main

test: bin/tests
	./bin/tests

bench: bin/bench
	./bin/bench ops

clean:
	rm -rf $(BUILD) bin

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
