#include "data/safetensors.h"

#include <fstream>

#include "data/atomic_file.h"
#include "data/json_path.h"

namespace sa {

namespace {

const char* st_dtype(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F64: return "F64";
    case DType::BF16: return "BF16";
    case DType::I32: return "I32";
    case DType::U8: return "U8";
  }
  return "?";
}

DType parse_dtype(const std::string& s, const std::string& path) {
  for (DType t : {DType::F32, DType::F64, DType::BF16, DType::I32, DType::U8})
    if (s == st_dtype(t)) return t;
  fail("{}: unsupported safetensors dtype '{}'", path, s);
}

}  // namespace

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const nlohmann::json& metadata) {
  nlohmann::json header = nlohmann::json::object();
  std::vector<Tensor> host;
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    Tensor h = t.to(Device::cpu());
    header[name] = {{"dtype", st_dtype(h.dtype())}, {"shape", h.shape()}, {"data_offsets", {offset, offset + h.nbytes()}}};
    offset += h.nbytes();
    host.push_back(h);
  }
  header["__metadata__"] = {{"sensealign", metadata.dump()}};
  std::string hs = header.dump();
  hs.append((8 - hs.size() % 8) % 8, ' ');  // align the data to 8 bytes
  uint64_t n = hs.size();
  std::vector<std::pair<const char*, size_t>> parts = {{reinterpret_cast<const char*>(&n), 8}, {hs.data(), hs.size()}};
  for (const Tensor& h : host) parts.emplace_back(static_cast<const char*>(h.raw()), h.nbytes());
  write_parts_atomically(path, parts);
}

static SafetensorsFile read_safetensors(const std::string& path);

SafetensorsFile load_safetensors(const std::string& path) {
  try {
    return read_safetensors(path);
  } catch (const CheckpointDamaged&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const Error& e) {  // our checks name the file
    throw CheckpointDamaged(e.what());
  } catch (const nlohmann::json::exception& e) {  // a header field of another type: damaged too
    throw CheckpointDamaged(fmt::format("{}: malformed safetensors header: {}", path, e.what()));
  }
}

static SafetensorsFile read_safetensors(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  SA_CHECK(f, "{}: cannot open checkpoint", path);
  const uint64_t size = static_cast<uint64_t>(f.tellg());
  f.seekg(0);
  uint64_t n = 0;
  SA_CHECK(size >= 8 && f.read(reinterpret_cast<char*>(&n), 8) && n <= size - 8,
           "{}: truncated or not a safetensors file ({} bytes; header length {})", path, size, n);
  std::string hs(n, '\0');
  f.read(hs.data(), static_cast<std::streamsize>(n));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(hs);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: malformed safetensors header: {}", path, e.what());
  }
  SA_CHECK(header.is_object(), "{}: malformed safetensors header: expected a JSON object", path);
  SafetensorsFile out;
  out.path = path;
  const uint64_t data0 = 8 + n;
  for (auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (info.is_object() && info.contains("sensealign")) {
        out.metadata = nlohmann::json::parse(info["sensealign"].get<std::string>());
        if (out.metadata.is_null()) out.metadata = nlohmann::json::object();  // written without any
        SA_CHECK(out.metadata.is_object(), "{}: the sensealign metadata is not a JSON object", path);
      }
      continue;
    }
    DType dt = parse_dtype(info.at("dtype").get<std::string>(), path);
    const std::string what = fmt::format("{}: tensor '{}'", path, name);
    SA_CHECK(info.at("shape").is_array(), "{} shape is {}, expected a list", what, info.at("shape").dump());
    Shape shape;
    for (const nlohmann::json& d : info.at("shape")) shape.push_back(json_as<int64_t>(d, what + " shape"));
    const nlohmann::json& offsets = info.at("data_offsets");
    uint64_t b = json_as<uint64_t>(offsets.at(0), what + " data_offsets"), e = json_as<uint64_t>(offsets.at(1), what + " data_offsets");
    SA_CHECK(e >= b && e <= size - data0, "{}: tensor '{}' lies outside the file (truncated checkpoint: {} bytes, needs {})",
             path, name, size, e > size ? e : data0 + e);
    // The shape's bytes, checked against the file before anything is allocated from it.
    // Each dimension, and the product of the non-zero ones, within the file (a zero dimension
    // must not let the others pass unchecked: strides are computed from all of them).
    uint64_t bytes = dtype_size(dt), nonzero = dtype_size(dt);
    for (int64_t d : shape) {
      const uint64_t room = size - data0;
      SA_CHECK(d >= 0 && (d == 0 || nonzero <= room / static_cast<uint64_t>(d)),
               "{}: tensor '{}' has shape {}, larger than the file", path, name, to_string(shape));
      if (d > 0) nonzero *= static_cast<uint64_t>(d);
      bytes *= static_cast<uint64_t>(d);
    }
    SA_CHECK(e - b == bytes, "{}: tensor '{}' is {} with {} bytes, but its data offsets hold {}", path, name,
             to_string(shape), bytes, e - b);
    Tensor t = Tensor::empty(shape, dt);
    f.seekg(static_cast<std::streamoff>(data0 + b));
    f.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(e - b));
    SA_CHECK(f.good(), "{}: reading tensor '{}' failed", path, name);
    out.tensors.emplace(name, t);
  }
  return out;
}

void take_tensor(const SafetensorsFile& f, const std::string& origin, const std::string& name, Tensor& t) {
  auto it = f.tensors.find(name);
  if (it == f.tensors.end()) throw CheckpointDamaged(fmt::format("{}: tensor '{}' missing", origin, name));
  SA_CHECK(it->second.shape() == t.shape(), "{}: tensor '{}' is {} but the config needs {} (did the config change?)",
           origin, name, to_string(it->second.shape()), to_string(t.shape()));
  t.copy_from(it->second.to(t.dtype()).to(t.device()));
}

}  // namespace sa
