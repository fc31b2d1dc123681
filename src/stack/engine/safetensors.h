// Safetensors: the Hugging Face weight format, read as a second source of model weights.
//
// Layout: u64 little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [rows, cols], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"k": "v"}}
// then the tensor data; offsets are relative to the end of the header. The reader maps the file
// and checks every tensor's dtype, shape and byte range before handing out pointers.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"
#include "core/status.h"

namespace recur::safetensors {

struct Tensor {
  std::string name;
  std::string dtype_name;        // as written: "F32", "F16", "BF16", "I8", ...
  DType dtype = DType::kF32;
  std::vector<uint64_t> shape;   // outermost first, as PyTorch
  uint64_t begin = 0, end = 0;   // relative to the data section
  const std::byte* data = nullptr;
};

class File {
 public:
  std::vector<Tensor> tensors;  // sorted by data offset
  std::map<std::string, std::string> metadata;
  uint64_t header_bytes = 0;

  const Tensor* find(std::string_view name) const;

 private:
  friend Result<File> parse(std::span<const std::byte>, std::string_view);
  friend Result<File> read(const std::string&);
  friend Result<File> read(const std::string&, FileMemory);
  std::map<std::string, size_t, std::less<>> index_;
  MappedFile mapping_;
};

Result<File> parse(std::span<const std::byte> bytes, std::string_view source);
Result<File> read(const std::string& path);
// The same with the bytes held as `memory` says (a model's weights follow engine.weights_memory).
Result<File> read(const std::string& path, FileMemory memory);

// Serializes tensors (name, dtype, shape, bytes) into a safetensors file image (tests, tools).
struct PendingTensor {
  std::string name;
  DType dtype;
  std::vector<uint64_t> shape;
  std::vector<std::byte> data;
};
Result<std::vector<std::byte>> serialize(const std::vector<PendingTensor>& tensors);

}  // namespace recur::safetensors
