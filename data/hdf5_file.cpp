#include "data/hdf5_file.h"

#include <hdf5.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "data/atomic_file.h"

namespace sa {

namespace {
// Our errors replace HDF5's own stack dump on stderr. And no cleanup at exit: after a failed
// close (a full disk) HDF5's exit handler would try that file again and crash; every file we
// write is closed explicitly, and one that failed is removed anyway.
void quiet() {
  static bool done = (H5dont_atexit(), H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr), true);
  (void)done;
}

// Why H5Fcreate failed: the directory, else the OS error of its open(), else the innermost
// message on HDF5's error stack (which our quiet() keeps off stderr).
std::string create_failure(const std::string& path, int err) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  if (!fs::exists(dir, ec)) return fmt::format("the directory {} does not exist", dir.string());
  if (!fs::is_directory(dir, ec)) return fmt::format("{} is not a directory", dir.string());
  if (fs::is_directory(path, ec)) return "it is a directory";
  if (err != 0) return std::strerror(err);
  std::string inner;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
        auto* s = static_cast<std::string*>(out);
        if (s->empty() && e->desc) *s = e->desc;
        return 0;
      },
      &inner);
  return inner.empty() ? "HDF5 gave no reason" : inner;
}
}  // namespace

H5File H5File::open(const std::string& path) {
  quiet();
  hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  SA_CHECK(id >= 0, "{}: cannot open as HDF5 (missing, truncated or not an HDF5 file)", path);
  return H5File(id, path);
}

H5File H5File::create(const std::string& path) {
  quiet();
  errno = 0;
  hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  SA_CHECK(id >= 0, "{}: cannot create HDF5 file: {}", path, create_failure(path, errno));
  return H5File(id, path);
}

H5File::~H5File() {
  if (id_ >= 0) H5Fclose(id_);
}

void H5File::close() {
  errno = 0;
  const bool ok = H5Fflush(id_, H5F_SCOPE_GLOBAL) >= 0;
  const int err = errno;
  const bool closed = H5Fclose(id_) >= 0;
  id_ = -1;
  SA_CHECK(ok && closed, "{}: writing the HDF5 file failed ({})", path_,
           err ? std::strerror(err) : errno ? std::strerror(errno) : "the HDF5 library gave no reason");
}

void write_hdf5_atomically(const std::string& path, const std::function<void(H5File&)>& fill) {
  const std::string tmp = path + ".tmp";
  try {
    H5File f = H5File::create(tmp);
    fill(f);
    f.close();
  } catch (const Error& e) {
    std::remove(tmp.c_str());
    // Name the file the caller asked for, not our temporary one.
    std::string m = e.what();
    if (m.rfind(tmp + ":", 0) == 0) m = path + m.substr(tmp.size());
    throw Error(m);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  commit_file(tmp, path);
}

bool H5File::has(const std::string& name) const {
  // Check each path prefix: H5Lexists fails on a missing intermediate group.
  size_t at = 0;
  while (true) {
    size_t slash = name.find('/', at + 1);
    std::string prefix = name.substr(0, slash);
    if (!prefix.empty() && prefix != "/" && H5Lexists(id_, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) return true;
    at = slash;
  }
}

Tensor H5File::read(const std::string& name) const {
  SA_CHECK(has(name), "{}: dataset '{}' not found", path_, name);
  hid_t ds = H5Dopen2(id_, name.c_str(), H5P_DEFAULT);
  SA_CHECK(ds >= 0, "{}: cannot open dataset '{}'", path_, name);
  hid_t space = H5Dget_space(ds);
  int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  H5Sclose(space);
  hid_t type = H5Dget_type(ds);
  bool is_float = H5Tget_class(type) == H5T_FLOAT;
  H5Tclose(type);
  if (!is_float) {
    H5Dclose(ds);
    fail("{}: dataset '{}' is not a float dataset", path_, name);
  }
  // The shape is what the file says: check it against the file before allocating from it. Raw
  // data cannot exceed the file; compressed (filtered) data can, by deflate's ratio at most.
  hid_t dcpl = H5Dget_create_plist(ds);
  const bool filtered = dcpl >= 0 && H5Pget_nfilters(dcpl) > 0;
  if (dcpl >= 0) H5Pclose(dcpl);
  hsize_t file_bytes = 0;
  if (H5Fget_filesize(id_, &file_bytes) < 0) {
    H5Dclose(ds);
    fail("{}: cannot read the file's size", path_);
  }
  const uint64_t limit = filtered ? file_bytes * 1032 : file_bytes;
  uint64_t nonzero = sizeof(float);  // each dimension and the product of the non-zero ones
  for (hsize_t d : dims) {
    if (d != 0 && nonzero > limit / d) {
      H5Dclose(ds);
      fail("{}: dataset '{}' has a shape with {} elements in one dimension or in all, more data than the file can "
           "hold ({} bytes)", path_, name, d, file_bytes);
    }
    if (d != 0) nonzero *= d;
  }
  Shape s(dims.begin(), dims.end());
  Tensor t = Tensor::empty(s, DType::F32);
  herr_t st = t.numel() ? H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.raw()) : 0;
  H5Dclose(ds);
  SA_CHECK(st >= 0, "{}: reading dataset '{}' failed (file truncated or corrupt?)", path_, name);
  return t;
}

std::vector<std::string> H5File::list(const std::string& group) const {
  std::vector<std::string> names;
  H5Literate_by_name(
      id_, group.c_str(), H5_INDEX_NAME, H5_ITER_INC, nullptr,
      [](hid_t, const char* n, const H5L_info_t*, void* out) -> herr_t {
        static_cast<std::vector<std::string>*>(out)->push_back(n);
        return 0;
      },
      &names, H5P_DEFAULT);
  return names;
}

void H5File::write(const std::string& name, const Tensor& t) {
  Tensor h = t.to(Device::cpu()).to(DType::F32);
  std::vector<hsize_t> dims(h.shape().begin(), h.shape().end());
  hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t ds = H5Dcreate2(id_, name.c_str(), H5T_IEEE_F32LE, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  H5Pclose(lcpl);
  H5Sclose(space);
  SA_CHECK(ds >= 0, "{}: cannot create dataset '{}'", path_, name);
  herr_t st = h.numel() ? H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, h.raw()) : 0;
  H5Dclose(ds);
  SA_CHECK(st >= 0, "{}: writing dataset '{}' failed", path_, name);
}

void H5File::write_string(const std::string& name, const std::string& value) {
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  hsize_t one = 1;
  hid_t space = H5Screate_simple(1, &one, nullptr);
  hid_t ds = H5Dcreate2(id_, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  SA_CHECK(ds >= 0, "{}: cannot create dataset '{}'", path_, name);
  const char* p = value.c_str();
  herr_t st = H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, &p);
  H5Dclose(ds);
  H5Sclose(space);
  H5Tclose(type);
  SA_CHECK(st >= 0, "{}: writing dataset '{}' failed", path_, name);
}

std::string H5File::read_string(const std::string& name) const {
  SA_CHECK(has(name), "{}: dataset '{}' not found", path_, name);
  hid_t ds = H5Dopen2(id_, name.c_str(), H5P_DEFAULT);
  SA_CHECK(ds >= 0, "{}: cannot open dataset '{}'", path_, name);
  hid_t stored = H5Dget_type(ds);
  const bool is_string = H5Tget_class(stored) == H5T_STRING && H5Tis_variable_str(stored) > 0;
  const H5T_cset_t cset = is_string ? H5Tget_cset(stored) : H5T_CSET_ASCII;
  H5Tclose(stored);
  hid_t space = H5Dget_space(ds);
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  if (!is_string || n < 1) {
    H5Sclose(space);
    H5Dclose(ds);
    fail("{}: dataset '{}' is not a variable-length string", path_, name);
  }
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, cset);  // HDF5 does not convert between character sets
  std::vector<char*> values(static_cast<size_t>(n), nullptr);
  const herr_t st = H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  std::string out = st >= 0 && values[0] ? values[0] : "";
  if (st >= 0) H5Dvlen_reclaim(type, space, H5P_DEFAULT, values.data());
  H5Tclose(type);
  H5Sclose(space);
  H5Dclose(ds);
  SA_CHECK(st >= 0, "{}: reading dataset '{}' failed", path_, name);
  return out;
}

}  // namespace sa
