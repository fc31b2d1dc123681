#include "trace/traced_mutex.h"

#include <sys/syscall.h>
#include <unistd.h>

namespace recur::trace {

uint32_t TracedMutex::current_tid() {
  static thread_local uint32_t tid = uint32_t(::syscall(SYS_gettid));
  return tid;
}

}  // namespace recur::trace
