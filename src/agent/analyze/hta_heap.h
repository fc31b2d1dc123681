// Heap preparation for a short process that reads large traces. On this project's VMs a first
// touch of a 4 KiB page costs ~15 µs (docs/performance.md, "## Trace analyses: HTA mode"), so
// reading a 15 MB trace spent more time in page faults than in parsing. reserve_heap() makes
// glibc serve every block from one brk heap (no mmap per large block, nothing returned to the
// OS between phases, one arena for all threads) and pre-grows that heap by `bytes`, madvised
// for transparent huge pages: 2 MiB pages, 512x fewer faults.
//
// Process-wide and irreversible: for a CLI process, not for a library inside a long-running
// program. A no-op without glibc or MADV_HUGEPAGE. Call before the allocations; not
// thread-safe against concurrent allocation.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace recur::analyze {

void reserve_heap(size_t bytes);

// The JSON bytes a trace file holds: gzip's ISIZE trailer for a .gz, else the file size
// (0 if unreadable).
size_t trace_json_bytes(const std::string& path);

}  // namespace recur::analyze
