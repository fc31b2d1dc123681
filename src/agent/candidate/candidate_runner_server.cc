#include "candidate/candidate_runner_server.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "candidate/candidate_protocol.h"
#include "core/tensor.h"

namespace recur::agent {

namespace {

// fd 3 mapped whole; mapped again when the evaluator resized it.
class RunnerShm {
 public:
  ~RunnerShm() {
    if (base_ != nullptr) munmap(base_, size_);
  }
  Result<char*> map() {
    struct stat st{};
    if (fstat(kRunnerShmFd, &st) != 0) return io_error("fd {}: not open (the tensors' shared memory)", kRunnerShmFd);
    const size_t size = size_t(st.st_size);
    if (base_ != nullptr && size == size_) return base_;
    if (base_ != nullptr) munmap(base_, size_);
    base_ = nullptr;
    size_ = size;
    if (size == 0) return io_error("fd {}: empty shared memory", kRunnerShmFd);
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, kRunnerShmFd, 0);
    if (p == MAP_FAILED) return io_error("fd {}: mmap of {} bytes failed", kRunnerShmFd, size);
    base_ = static_cast<char*>(p);
    return base_;
  }
  size_t size() const { return size_; }

 private:
  char* base_ = nullptr;
  size_t size_ = 0;
};

Result<TensorView> runner_view(char* base, size_t size, uint64_t offset, const kernels::TensorSpec& t,
                               const kernels::Shape& shape) {
  const std::vector<int64_t> dims = t.dims(shape);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  const uint64_t bytes = uint64_t(n) * dtype_size(t.dtype);
  if (offset % 64 != 0 || offset + bytes > size)
    return invalid_argument("tensor {}: offset {} + {} bytes is not 64-byte aligned inside the {} shared bytes", t.name,
                            offset, bytes, size);
  return TensorView::make(base + offset, t.dtype, dims);
}

Status runner_run(const kernels::KernelRegistry& registry, RunnerShm& shm, std::string_view line) {
  RECUR_ASSIGN_OR_RETURN(RunnerRun r, parse_run_request(line));
  RECUR_ASSIGN_OR_RETURN(const kernels::KernelSpec* spec, registry.lookup(r.kernel));
  RECUR_ASSIGN_OR_RETURN(const kernels::VariantSpec* v, spec->lookup_variant(r.variant));
  RECUR_RETURN_IF_ERROR(kernels::check_runnable(*v));
  RECUR_ASSIGN_OR_RETURN(kernels::Shape shape, spec->parse_shape(r.shape));
  const size_t tensors = spec->inputs.size() + spec->outputs.size();
  const bool set_per_call = r.iters > 1 && r.offsets.size() == tensors * size_t(r.iters);
  if (r.offsets.size() != tensors && !set_per_call)
    return invalid_argument("run {}: {} offsets for {} tensors ({}): expected one set, or one per call ({} sets)",
                            r.kernel, r.offsets.size(), tensors, spec->describe_tensors(shape), r.iters);
  RECUR_ASSIGN_OR_RETURN(char* base, shm.map());
  const size_t sets = set_per_call ? size_t(r.iters) : 1;
  std::vector<std::vector<TensorView>> in(sets), out(sets);
  for (size_t set = 0; set < sets; ++set) {
    for (size_t i = 0; i < tensors; ++i) {
      const bool is_input = i < spec->inputs.size();
      const kernels::TensorSpec& t = is_input ? spec->inputs[i] : spec->outputs[i - spec->inputs.size()];
      RECUR_ASSIGN_OR_RETURN(TensorView view, runner_view(base, shm.size(), r.offsets[set * tensors + i], t, shape));
      (is_input ? in[set] : out[set]).push_back(view);
    }
  }
  for (int64_t i = 0; i < r.iters; ++i) {
    const size_t set = size_t(i) % sets;
    v->run({.shape = shape, .inputs = in[set], .outputs = out[set]});
  }
  return ok_status();
}

std::string runner_variants(const kernels::KernelRegistry& registry) {
  std::string line = "ok";
  for (const kernels::KernelSpec* k : registry.all())
    for (const kernels::VariantSpec& v : k->variants) line += fmt::format(" {}/{}", k->name, v.name);
  return line;
}

}  // namespace

int serve_kernel_runner(const kernels::KernelRegistry& registry) {
  RunnerShm shm;
  char* buf = nullptr;
  size_t cap = 0;
  int rc = 0;
  for (ssize_t n; (n = getline(&buf, &cap, stdin)) > 0;) {
    std::string line(buf, size_t(n));
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    std::string reply;
    if (line == "quit") break;
    if (line == "variants") {
      reply = runner_variants(registry);
    } else if (line.starts_with("run ")) {
      Status s = runner_run(registry, shm, line);
      reply = s ? "ok" : "error " + s.error().message();
    } else {
      reply = fmt::format("error unknown request '{}': expected variants, run or quit", line.substr(0, 80));
    }
    for (char& c : reply)
      if (c == '\n') c = ' ';
    if (std::fputs((reply + "\n").c_str(), stdout) < 0 || std::fflush(stdout) != 0) {
      rc = 1;
      break;
    }
  }
  std::free(buf);
  return rc;
}

}  // namespace recur::agent
