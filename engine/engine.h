// Everything a layer or tool needs from the engine. Includes no CUDA header.
#pragma once
#include "engine/backend.h"
#include "engine/core/autograd.h"
#include "engine/core/device.h"
#include "engine/core/error.h"
#include "engine/core/precision.h"
#include "engine/core/tensor.h"
#include "engine/ops/ops.h"
