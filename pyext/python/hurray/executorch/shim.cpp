// The bridge between a Hurray file and ExecuTorch's runtime, compiled on
// first use against the installed executorch wheel's headers and linked to
// its libexecutorch.so and the kernel library its Python runtime uses
// (hurray/executorch/_build.py). Its C functions are called through ctypes
// (hurray/executorch/__init__.py).
//
// A program (.pte) is loaded by ExecuTorch's MmapDataLoader; its external
// weights come from `HurrayDataMap`, a NamedDataMap over tensors the caller
// describes by key, layout and address: the addresses are inside the Hurray
// file's mapping, and get_data() hands them out as they are (no copy, no
// free), so the weights stay file pages.

#include <executorch/extension/data_loader/mmap_data_loader.h>
#include <executorch/extension/memory_allocator/malloc_memory_allocator.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/core/named_data_map.h>
#include <executorch/runtime/core/tensor_layout.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/runtime.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rt = executorch::runtime;
using executorch::aten::ScalarType;
using executorch::extension::MallocMemoryAllocator;
using executorch::extension::MmapDataLoader;

namespace {

struct Weight {
  std::string key;
  const void* data;
  size_t nbytes;
  std::vector<int32_t> sizes;
  std::vector<uint8_t> dim_order;
  ScalarType type;
};

// The named data of a Hurray file, as ExecuTorch asks for it.
class HurrayDataMap final : public rt::NamedDataMap {
 public:
  explicit HurrayDataMap(std::vector<Weight> weights) : weights_(std::move(weights)) {
    for (size_t i = 0; i < weights_.size(); i++) {
      by_key_.emplace(weights_[i].key, i);
    }
  }

  rt::Result<const rt::TensorLayout> get_tensor_layout(std::string_view key) const override {
    const Weight* w = find(key);
    if (w == nullptr) return rt::Error::NotFound;
    return rt::TensorLayout::create(
        rt::Span<const int32_t>(w->sizes.data(), w->sizes.size()),
        rt::Span<const uint8_t>(w->dim_order.data(), w->dim_order.size()),
        w->type);
  }

  rt::Result<rt::FreeableBuffer> get_data(std::string_view key) const override {
    const Weight* w = find(key);
    if (w == nullptr) return rt::Error::NotFound;
    // A view into the file's mapping: nothing to free.
    return rt::FreeableBuffer(w->data, w->nbytes, nullptr);
  }

  rt::Error load_data_into(std::string_view key, void* buffer, size_t size) const override {
    const Weight* w = find(key);
    if (w == nullptr) return rt::Error::NotFound;
    if (size < w->nbytes) return rt::Error::InvalidArgument;
    std::memcpy(buffer, w->data, w->nbytes);
    return rt::Error::Ok;
  }

  rt::Result<uint32_t> get_num_keys() const override {
    return static_cast<uint32_t>(weights_.size());
  }

  rt::Result<const char*> get_key(uint32_t index) const override {
    if (index >= weights_.size()) return rt::Error::InvalidArgument;
    return weights_[index].key.c_str();
  }

  // The keys asked for that the file lacks, and the last one it has, for
  // the caller's message when ExecuTorch refuses the weights.
  mutable std::vector<std::string> missing;
  mutable std::string last;

 private:
  const Weight* find(std::string_view key) const {
    auto it = by_key_.find(std::string(key));
    if (it == by_key_.end()) {
      missing.emplace_back(key);
      return nullptr;
    }
    last = it->first;
    return &weights_[it->second];
  }

  std::vector<Weight> weights_;
  std::map<std::string, size_t> by_key_;
};

// One loaded method and the memory it runs in.
struct LoadedMethod {
  MallocMemoryAllocator method_allocator;
  MallocMemoryAllocator temp_allocator;
  std::vector<std::vector<uint8_t>> planned;
  std::vector<rt::Span<uint8_t>> spans;
  std::unique_ptr<rt::HierarchicalAllocator> planned_memory;
  std::unique_ptr<rt::MemoryManager> memory;
  std::optional<rt::Method> method;
  std::vector<rt::EValue> outputs;
};

void set_error(char* err, size_t len, const std::string& message) {
  if (err != nullptr && len > 0) std::snprintf(err, len, "%s", message.c_str());
}

}  // namespace

struct hx_program {
  std::unique_ptr<MmapDataLoader> loader;
  std::optional<rt::Program> program;
  std::unique_ptr<HurrayDataMap> weights;
  std::map<std::string, std::unique_ptr<LoadedMethod>> methods;
};

extern "C" {

// Loads the program at `pte` with `n` weights: key, address, byte length,
// ExecuTorch scalar type, rank and sizes (all ranks' sizes, concatenated).
hx_program* hx_load(const char* pte, size_t n, const char* const* keys, const void* const* data,
                    const size_t* nbytes, const int8_t* types, const int32_t* ranks,
                    const int32_t* sizes, char* err, size_t errlen) {
  rt::runtime_init();
  auto loader = MmapDataLoader::from(pte);
  if (!loader.ok()) {
    set_error(err, errlen, std::string("ExecuTorch could not map the program ") + pte);
    return nullptr;
  }
  std::vector<Weight> weights;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    Weight w{keys[i], data[i], nbytes[i], {}, {}, static_cast<ScalarType>(types[i])};
    for (int32_t d = 0; d < ranks[i]; d++) {
      w.sizes.push_back(sizes[at++]);
      w.dim_order.push_back(static_cast<uint8_t>(d));
    }
    weights.push_back(std::move(w));
  }
  auto p = std::make_unique<hx_program>();
  p->loader = std::make_unique<MmapDataLoader>(std::move(loader.get()));
  auto program = rt::Program::load(p->loader.get());
  if (!program.ok()) {
    set_error(err, errlen, std::string("ExecuTorch could not load the program ") + pte +
                               " (error " + std::to_string(static_cast<int>(program.error())) + ")");
    return nullptr;
  }
  p->program.emplace(std::move(program.get()));
  p->weights = std::make_unique<HurrayDataMap>(std::move(weights));
  return p.release();
}

size_t hx_method_count(hx_program* p) { return p->program->num_methods(); }

const char* hx_method_name(hx_program* p, size_t i) {
  auto name = p->program->get_method_name(i);
  return name.ok() ? name.get() : nullptr;
}

// Runs `method` (loaded on first use) on `n` tensor inputs; returns the
// number of outputs, or -1 with `err` set.
int64_t hx_run(hx_program* p, const char* method, size_t n, const int8_t* types,
               const int32_t* ranks, const int32_t* sizes, void* const* data, char* err,
               size_t errlen) {
  auto& slot = p->methods[method];
  if (!slot) {
    auto m = std::make_unique<LoadedMethod>();
    auto meta = p->program->method_meta(method);
    if (!meta.ok()) {
      p->methods.erase(method);
      set_error(err, errlen, std::string("the program has no method ") + method);
      return -1;
    }
    for (size_t i = 0; i < meta->num_memory_planned_buffers(); i++) {
      m->planned.emplace_back(static_cast<size_t>(meta->memory_planned_buffer_size(i).get()));
    }
    for (auto& b : m->planned) m->spans.emplace_back(b.data(), b.size());
    m->planned_memory = std::make_unique<rt::HierarchicalAllocator>(
        rt::Span<rt::Span<uint8_t>>(m->spans.data(), m->spans.size()));
    m->memory = std::make_unique<rt::MemoryManager>(&m->method_allocator, m->planned_memory.get(),
                                                   &m->temp_allocator);
    p->weights->missing.clear();
    p->weights->last.clear();
    auto loaded = p->program->load_method(method, m->memory.get(), nullptr, p->weights.get());
    if (!loaded.ok()) {
      std::string message = std::string("ExecuTorch could not load method ") + method +
                            " with these weights (error " +
                            std::to_string(static_cast<int>(loaded.error())) + ")";
      if (!p->weights->missing.empty()) {
        message += ": the program needs tensor '" + p->weights->missing.front() +
                   "', which the weights file does not have";
      } else if (!p->weights->last.empty()) {
        message += ": tensor '" + p->weights->last +
                   "' of the weights file is not the type and shape the program has for it";
      }
      p->methods.erase(method);
      set_error(err, errlen, message);
      return -1;
    }
    m->method.emplace(std::move(loaded.get()));
    slot = std::move(m);
  }
  LoadedMethod& m = *slot;
  if (n != m.method->inputs_size()) {
    set_error(err, errlen, std::string("method ") + method + " takes " +
                               std::to_string(m.method->inputs_size()) + " inputs, not " +
                               std::to_string(n));
    return -1;
  }
  // The inputs' shapes, kept alive until the method has run.
  std::vector<std::vector<int32_t>> input_sizes(n), input_strides(n);
  std::vector<std::vector<uint8_t>> input_orders(n);
  std::vector<std::unique_ptr<executorch::aten::TensorImpl>> impls;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    for (int32_t d = 0; d < ranks[i]; d++) {
      input_sizes[i].push_back(sizes[at++]);
      input_orders[i].push_back(static_cast<uint8_t>(d));
    }
    input_strides[i].resize(ranks[i]);
    int32_t stride = 1;
    for (int32_t d = ranks[i] - 1; d >= 0; d--) {
      input_strides[i][d] = stride;
      stride *= input_sizes[i][d];
    }
    impls.push_back(std::make_unique<executorch::aten::TensorImpl>(
        static_cast<ScalarType>(types[i]), ranks[i], input_sizes[i].data(), data[i],
        input_orders[i].data(), input_strides[i].data()));
    auto status = m.method->set_input(rt::EValue(executorch::aten::Tensor(impls.back().get())), i);
    if (status != rt::Error::Ok) {
      set_error(err, errlen, std::string("method ") + method + " refused input " +
                                 std::to_string(i) + " (error " +
                                 std::to_string(static_cast<int>(status)) + ")");
      return -1;
    }
  }
  auto status = m.method->execute();
  if (status != rt::Error::Ok) {
    set_error(err, errlen, std::string("method ") + method + " failed (error " +
                               std::to_string(static_cast<int>(status)) + ")");
    return -1;
  }
  m.outputs.assign(m.method->outputs_size(), rt::EValue());
  status = m.method->get_outputs(m.outputs.data(), m.outputs.size());
  if (status != rt::Error::Ok) {
    set_error(err, errlen, std::string("method ") + method + ": no outputs");
    return -1;
  }
  return static_cast<int64_t>(m.outputs.size());
}

// Output `i` of the last run of `method`: 0 for a tensor (its type, rank,
// sizes and bytes filled in), -1 for anything else.
int hx_output(hx_program* p, const char* method, size_t i, int8_t* type, int32_t* rank,
              const int32_t** sizes, const void** data, size_t* nbytes) {
  auto it = p->methods.find(method);
  if (it == p->methods.end() || i >= it->second->outputs.size()) return -1;
  const rt::EValue& v = it->second->outputs[i];
  if (!v.isTensor()) return -1;
  const auto& t = v.toTensor();
  *type = static_cast<int8_t>(t.scalar_type());
  *rank = static_cast<int32_t>(t.dim());
  *sizes = t.sizes().data();
  *data = t.const_data_ptr();
  *nbytes = t.nbytes();
  return 0;
}

void hx_free(hx_program* p) { delete p; }

}  // extern "C"
