// The compiled core of the Python package `sensealign` (eval/python/sensealign/ re-exports it): a
// trained model as numpy arrays, for users who work in Python (bilm-tf, AllenNLP, Flair,
// transformers, MUSE).
//   import sensealign
//   m = sensealign.load("runs/saelmo")                       # or options=..., weights=...
//   vecs = m.embed([["the", "bank", "."]])                   # [layers, tokens, dim] float32 each
//   m.senses("bank"); m.nearest("bank", 5)                   # SaELMo runs
//   sensealign.Aligner.load("W.layer{layer}.txt").apply(vecs)
// Errors are the tools' messages, raised as RuntimeError; embedding releases the GIL, so threads
// can share one model.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <numeric>
#include <cmath>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "data/corpus.h"
#include "data/input_limits.h"
#include "engine/cpu/blas_kernel.h"
#include "eval/aligned_encoder.h"
#include "eval/alignment.h"
#include "eval/sense_neighbours.h"
#include "layers/bert_encoder.h"
#include "layers/load_encoder.h"
#include "sense/sense_model.h"

namespace py = pybind11;

namespace sa {
namespace {

// A [layers, tokens, dim] tensor as a float32 numpy array (a copy on the host).
py::array_t<float> to_numpy(const Tensor& t) {
  const Tensor h = t.to(DType::F32).to(Device::cpu());
  std::vector<py::ssize_t> shape(h.shape().begin(), h.shape().end());
  py::array_t<float> a(shape);
  std::memcpy(a.mutable_data(), h.data<float>(), h.nbytes());
  return a;
}

Tensor from_numpy(const py::array_t<float, py::array::c_style | py::array::forcecast>& a) {
  std::vector<float> v(a.data(), a.data() + a.size());
  return Tensor::from(v, Shape(a.shape(), a.shape() + a.ndim()));
}

using IdArray = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

class Model {
 public:
  Model(const std::string& path, const std::string& options, const std::string& weights, const std::string& device,
        const std::string& pieces) {
    EncoderSource s;
    s.run_dir = path, s.options = options, s.weights = weights, s.pieces = pieces;
    SA_CHECK(!path.empty() != (!options.empty() || !weights.empty()),
             "sensealign.load: give a path (a run or Hugging Face directory) or options= and weights=, not both");
    SA_CHECK(options.empty() == weights.empty(), "sensealign.load: options= and weights= go together");
    dev_ = resolve_device(device);
    encoder_ = load_encoder(s, dev_);
    run_dir_ = path;
  }

  // AllenNLP's ElmoEmbedder.embed_batch shape: one [layers, tokens, dim] array per sentence.
  std::vector<py::array_t<float>> embed(const Sentences& sentences, int batch_size) {
    SA_CHECK(batch_size > 0, "embed: batch_size must be positive, got {}", batch_size);
    // What the engine cannot embed is refused here, naming the sentence and token.
    for (size_t i = 0; i < sentences.size(); ++i) {
      SA_CHECK(!sentences[i].empty(), "embed: sentence {} is empty (each sentence is a list of one or more tokens)", i);
      for (size_t k = 0; k < sentences[i].size(); ++k) {
        const std::string& w = sentences[i][k];
        SA_CHECK(!w.empty(), "embed: sentence {}, token {} is an empty string", i, k);
        SA_CHECK(w.size() <= kMaxTokenBytes, "embed: sentence {}, token {} is {} bytes long, longer than a token can be "
                 "({} bytes)", i, k, w.size(), kMaxTokenBytes);
      }
    }
    Sentences input = sentences;
    if (encoder_->lowercase)
      for (auto& s : input)
        for (std::string& w : s) lowercase_ascii(w);
    std::vector<Tensor> out(input.size());
    {
      py::gil_scoped_release unlocked;
      embed_all(*encoder_, input, batch_size, "", [&](size_t i, const Tensor& e) { out[i] = e.to(Device::cpu()); });
    }
    std::vector<py::array_t<float>> arrays;
    for (const Tensor& t : out) arrays.push_back(to_numpy(t));
    return arrays;
  }

  // Each direction's live senses of `word`: sense id, its score and how often the last window of
  // selections chose it.
  py::list senses(const std::string& word) {
    SenseModel& r = sense_model();
    const int w = word_id(r, word);
    py::list out;
    for (int d = 0; d < 2; ++d) {
      const SenseHead& h = r.heads[static_cast<size_t>(d)];
      const int C = h.table.n_context();
      const std::vector<int> counts = h.usage.sense_counts(w, C);
      const int window = std::accumulate(counts.begin(), counts.end(), 0);
      for (int s = 0; s < C; ++s) {
        const int32_t row = h.table.row(w, s);
        if (!h.table.is_enabled(row)) continue;
        const int chosen = counts[static_cast<size_t>(s)];
        py::dict d_;
        d_["direction"] = d == 0 ? "forward" : "backward";
        d_["sense"] = s;
        d_["score"] = h.table.enabled[static_cast<size_t>(row)];
        d_["selections"] = chosen;
        d_["window"] = window;
        out.append(d_);
      }
    }
    return out;
  }

  // For each direction's live senses of `word`, the k nearest senses of other words (cosine).
  py::list nearest(const std::string& word, int k) {
    SA_CHECK(k > 0, "nearest: k must be positive, got {}", k);
    SenseModel& r = sense_model();
    const int w = word_id(r, word);
    py::list out;
    for (int d = 0; d < 2; ++d) {
      SenseHead& h = r.heads[static_cast<size_t>(d)];
      const int C = h.table.n_context();
      const Tensor unit = unit_rows(h.table.W);
      auto cosine = [&](int32_t a, int32_t b) {  // two unit rows read back, not the table
        const std::vector<double> ab = ops::gather_rows(unit, Tensor::from(std::vector<int32_t>{a, b}, {2}, unit.device())).values();
        double c = 0;
        for (size_t j = 0, P = ab.size() / 2; j < P; ++j) c += ab[j] * ab[P + j];
        return c;
      };
      const std::vector<uint8_t> candidates = neighbour_candidates(h, 0, 0);
      for (int s = 0; s < C; ++s) {
        const int32_t row = h.table.row(w, s);
        if (!h.table.is_enabled(row)) continue;
        py::list neighbours;
        for (const auto& g : nearest_sense_groups(h.table, unit, row, k, candidates))
          neighbours.append(py::make_tuple(sense_group_name(r.vocab, g, C), cosine(row, g[0])));
        py::dict e;
        e["direction"] = d == 0 ? "forward" : "backward";
        e["sense"] = s;
        e["neighbours"] = neighbours;
        out.append(e);
      }
    }
    return out;
  }

  // BERT: each sentence's WordPiece pieces as the model reads it ([CLS] and [SEP] left out);
  // transformers' BertTokenizerFast on the exported vocab.txt gives the same.
  std::vector<std::vector<std::string>> pieces(const Sentences& sentences) {
    const BertEncoder& b = bert("pieces");
    std::vector<std::vector<std::string>> out;
    for (const Sentence& s : sentences) {
      const WordPieces wp = b.tokenizer.encode_words(s);
      std::vector<std::string> p;
      for (int32_t id : wp.ids) p.push_back(b.tokenizer.vocab().piece(id));
      out.push_back(std::move(p));
    }
    return out;
  }

  // BERT: for given ids [B, T], every hidden state [B, T, H] (the embeddings' first) and, when the
  // model has its MLM head, the logits [B, T, V]: what transformers' BertModel (hidden_states)
  // and BertForMaskedLM return for the same ids.
  py::dict bert_outputs(const IdArray& ids, const IdArray& types, const IdArray& mask) {
    const BertEncoder& b = bert("bert_outputs");
    SA_CHECK(ids.ndim() == 2, "bert_outputs: input_ids must be [batch, pieces], got {} dimensions", ids.ndim());
    const Shape shape = {ids.shape(0), ids.shape(1)};
    auto same = [&](const IdArray& a, const char* name) {
      SA_CHECK(a.ndim() == 2 && a.shape(0) == shape[0] && a.shape(1) == shape[1], "bert_outputs: {} must be [{}, {}]",
               name, shape[0], shape[1]);
    };
    same(types, "token_type_ids"), same(mask, "attention_mask");
    auto tensor = [&](const IdArray& a) {
      return Tensor::from(std::vector<int32_t>(a.data(), a.data() + a.size()), shape, b.device());
    };
    std::vector<uint8_t> m(mask.data(), mask.data() + mask.size());
    const BertBatch batch{tensor(ids), tensor(types), Tensor::from(m, shape, b.device())};
    std::vector<Tensor> hidden;
    Tensor logits;
    {
      py::gil_scoped_release unlocked;
      NoGrad ng;
      hidden = b.model.forward(batch);
      if (b.model.has_mlm_head)
        logits = ops::reshape(b.model.mlm_logits(ops::reshape(hidden.back(), {shape[0] * shape[1], b.model.config.hidden})),
                              {shape[0], shape[1], -1});
    }
    py::list states;
    for (const Tensor& h : hidden) states.append(to_numpy(h));
    py::dict out;
    out["hidden_states"] = states;
    if (logits.defined()) out["logits"] = to_numpy(logits);
    return out;
  }

  int n_layers() const { return encoder_->n_layers(); }
  int64_t dim() const { return encoder_->dim(); }
  bool lowercase() const { return encoder_->lowercase; }
  std::string origin() const { return encoder_->origin; }

 private:
  SenseModel& sense_model() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!senses_) {
      SA_CHECK(!run_dir_.empty(), "senses: the model was loaded from bilm-tf files; senses need a SaELMo run directory");
      SA_CHECK(!is_bert_dir(run_dir_), "{}: a BERT model; senses and nearest need a SaELMo run directory", run_dir_);
      senses_ = std::make_unique<SenseModel>(load_sense_model(run_dir_));
    }
    SA_CHECK(senses_->sense(), "{}: not a SaELMo run (n_context = 0): it has no senses", run_dir_);
    return *senses_;
  }
  static int word_id(const SenseModel& r, std::string word) {
    if (r.lowercase) lowercase_ascii(word);
    SA_CHECK(r.vocab.contains(word), "'{}' is not in the vocabulary of {}", word, r.run_dir);
    return r.vocab.id(word);
  }

  const BertEncoder& bert(const char* what) const {
    const auto* b = dynamic_cast<const BertEncoder*>(encoder_.get());
    SA_CHECK(b, "{}: {} is not a BERT model", what, encoder_->origin);
    return *b;
  }

  Device dev_;
  std::unique_ptr<ContextualEncoder> encoder_;
  std::string run_dir_;
  std::mutex mu_;
  std::unique_ptr<SenseModel> senses_;
};

// A linear map per layer (bin/align fit's W.layer{layer}.txt), applied to embeddings.
class Aligner {
 public:
  static Aligner load(const std::string& pattern, int n_layers) {
    const bool per_layer = pattern.find("{layer}") != std::string::npos;
    auto path_of = [&](int l) {
      std::string p = pattern;
      if (size_t at = p.find("{layer}"); at != std::string::npos) p.replace(at, 7, std::to_string(l));
      return p;
    };
    if (n_layers <= 0) {  // as many layers as there are files
      SA_CHECK(per_layer, "Aligner.load: {} has no {{layer}}: give n_layers", pattern);
      n_layers = 0;
      while (std::filesystem::exists(path_of(n_layers))) ++n_layers;
      SA_CHECK(n_layers > 0, "Aligner.load: no file {}", path_of(0));
    }
    const Matrix first = read_map(path_of(0));
    Aligner a;
    a.maps_ = read_layer_maps(pattern, n_layers, first.rows, Device::cpu());
    a.pattern_ = pattern;
    return a;
  }
  std::vector<py::array_t<float>> apply(const std::vector<py::array_t<float, py::array::c_style | py::array::forcecast>>& arrays) {
    std::vector<py::array_t<float>> out;
    for (const auto& a : arrays) {
      SA_CHECK(a.ndim() == 3 && a.shape(0) == static_cast<py::ssize_t>(maps_.size()) && a.shape(2) == maps_[0].dim(0),
               "Aligner.apply: expected arrays [{}, tokens, {}] (layers, tokens, dim)", maps_.size(), maps_[0].dim(0));
      out.push_back(to_numpy(apply_alignment(from_numpy(a), maps_)));
    }
    return out;
  }
  int n_layers() const { return static_cast<int>(maps_.size()); }

 private:
  std::vector<Tensor> maps_;
  std::string pattern_;
};

}  // namespace
}  // namespace sa

PYBIND11_MODULE(_core, m) {
  m.doc() = "SenseAlign: sense-aware contextual embeddings (ELMo, SaELMo, BERT) as numpy arrays";
  py::class_<sa::Model>(m, "Model")
      .def("embed", &sa::Model::embed, py::arg("sentences"), py::arg("batch_size") = 64,
           "one float32 array [layers, tokens, dim] per sentence (a list of tokens), as AllenNLP's embed_batch")
      .def("senses", &sa::Model::senses, py::arg("word"), "a SaELMo word's live senses per direction")
      .def("nearest", &sa::Model::nearest, py::arg("word"), py::arg("k") = 10,
           "the k nearest senses of other words to each live sense, with cosines")
      .def("pieces", &sa::Model::pieces, py::arg("sentences"),
           "BERT: each sentence's WordPiece pieces as the model reads it (no [CLS]/[SEP])")
      .def("bert_outputs", &sa::Model::bert_outputs, py::arg("input_ids"), py::arg("token_type_ids"),
           py::arg("attention_mask"),
           "BERT: for ids [batch, pieces], {'hidden_states': [embeddings, layer 1, ...] each [batch, pieces, hidden], "
           "'logits': [batch, pieces, vocab] (with the MLM head)}, as transformers returns them")
      .def_property_readonly("n_layers", &sa::Model::n_layers)
      .def_property_readonly("dim", &sa::Model::dim)
      .def_property_readonly("lowercase", &sa::Model::lowercase)
      .def_property_readonly("origin", &sa::Model::origin);
  m.def(
      "load",
      [](const std::string& path, const std::string& options, const std::string& weights, const std::string& device,
         const std::string& pieces) { return std::make_unique<sa::Model>(path, options, weights, device, pieces); },
      py::arg("path") = "", py::kw_only(), py::arg("options") = "", py::arg("weights") = "", py::arg("device") = "auto",
      py::arg("pieces") = "mean",
      "a model: our run directory (ELMo, SaELMo, BERT), a Hugging Face BERT directory, or bilm-tf's "
      "options= and weights=");
  m.def(
      "blas",
      [] {
        const sa::BlasKernel& k = sa::blas_kernel();
        const sa::CpuSimd simd = sa::cpu_simd();
        return py::dict(py::arg("library") = k.library, py::arg("core") = k.core, py::arg("chosen_by") = k.chosen_by,
                        py::arg("note") = k.note, py::arg("core_level") = sa::blas_core_level(k.core),
                        py::arg("cpu_level") = simd.avx512 ? 2 : simd.avx2_fma ? 1 : 0);
      },
      "the CPU's BLAS and the GEMM kernel it runs (levels: 0 generic, 1 AVX2, 2 AVX-512), chosen when the module loaded");
  py::class_<sa::Aligner>(m, "Aligner")
      .def_static("load", &sa::Aligner::load, py::arg("pattern"), py::arg("n_layers") = 0,
                  "per-layer maps from `bin/align fit` (W.layer{layer}.txt), as bin/embed --align reads them")
      .def("apply", &sa::Aligner::apply, py::arg("arrays"), "each [layers, tokens, dim] array mapped layer by layer")
      .def_property_readonly("n_layers", &sa::Aligner::n_layers);
}
