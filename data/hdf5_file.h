// A small HDF5 wrapper for bilm-tf/AllenNLP files: float32 datasets by path, groups created on
// write, and errors that name the file and the dataset.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace sa {

class H5File {
 public:
  static H5File open(const std::string& path);    // read only
  static H5File create(const std::string& path);  // truncates
  H5File(H5File&& o) noexcept : id_(o.id_), path_(std::move(o.path_)) { o.id_ = -1; }
  H5File& operator=(H5File&&) = delete;
  ~H5File();

  bool has(const std::string& name) const;
  // A float dataset as an f32 CPU tensor of the dataset's shape.
  Tensor read(const std::string& name) const;
  // Names of the datasets directly under a group ("/" for the root).
  std::vector<std::string> list(const std::string& group = "/") const;
  void write(const std::string& name, const Tensor& t);
  // A (1,) variable-length UTF-8 string dataset (AllenNLP's sentence_to_index).
  void write_string(const std::string& name, const std::string& value);
  // Such a string dataset's first value; fails naming the file for another type or shape.
  std::string read_string(const std::string& name) const;
  const std::string& path() const { return path_; }
  // Flushes and closes, failing naming the file when HDF5 could not write all of it (a full disk
  // shows here, as the library buffers writes). The destructor closes unchecked.
  void close();

 private:
  H5File(long long id, std::string path) : id_(id), path_(std::move(path)) {}
  long long id_;
  std::string path_;
};

// Writes an HDF5 file through `fill` into path.tmp, closes it checked and puts it in place of
// `path` (commit_file): a failed write never replaces a good file and leaves nothing behind.
void write_hdf5_atomically(const std::string& path, const std::function<void(H5File&)>& fill);

}  // namespace sa
