// Vectors computed elsewhere, for xling_eval --embeddings: HDF5 files in bilm-tf/AllenNLP's layout
// (what `bin/embed` and `allennlp elmo` write): one dataset per sentence, [layers, tokens, dim] or
// [tokens, dim], found through the file's sentence_to_index JSON by the sentence's tokens joined
// with single spaces. Several files (one per data file) form one lookup, so any system's vectors
// can be scored without its model.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "data/hdf5_file.h"
#include "layers/encoder.h"

namespace sa {

class PrecomputedEncoder : public ContextualEncoder {
 public:
  explicit PrecomputedEncoder(const std::vector<std::string>& files);
  // Fails naming the files when a sentence is not in them, or its vectors have another token count.
  std::vector<Tensor> embed(const Sentences& batch, EncoderState* state = nullptr) const override;
  std::unique_ptr<EncoderState> new_state(int) const override;
  int n_layers() const override { return n_layers_; }
  int64_t dim() const override { return dim_; }
  Device device() const override { return Device::cpu(); }

 private:
  std::vector<H5File> files_;
  std::map<std::string, std::pair<size_t, std::string>> index_;  // sentence -> (file, dataset)
  int n_layers_ = 1;
  int64_t dim_ = 0;
};

}  // namespace sa
