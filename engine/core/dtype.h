// Element types. f32 is the training type, f64 exists for gradient checks, bf16 is a storage
// type for mixed precision (cast and GEMM only), i32 holds indices and labels, u8 holds masks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sa {

enum class DType : uint8_t { F32, F64, BF16, I32, U8 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F64: return 8;
    case DType::BF16: return 2;
    case DType::I32: return 4;
    case DType::U8: return 1;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::U8: return "u8";
  }
  return "?";
}

constexpr bool is_float(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::BF16; }

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::F32; }
template <> constexpr DType dtype_of<double>() { return DType::F64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::I32; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::U8; }

}  // namespace sa
