// UCX alone, without recur's threads (docs/performance.md "KV transfer: shm, TCP and UCX"): a
// target process maps BLOCKS * BLOCK bytes with ucp_mem_map, either the caller's memory (mmap) or
// memory UCX allocates (UCP_MEM_MAP_ALLOCATE); an initiator process then, per round, issues
// BLOCKS ucp_put_nbx of BLOCK bytes and one flush, and prints GB/s. The target either busy-polls
// its worker or never calls it (then only one-sided puts complete: emulated ones hang, so run it
// under `timeout`). Prints the initiator's endpoint (lanes) and whether ucp_rkey_ptr reaches the
// target's memory (it does when a shared-memory transport can map it).
//
// Mode `am` (target progresses): the initiator sends each block as an active message with
// UCP_AM_SEND_FLAG_RNDV (header: the offset) and the target's handler receives it in place with
// ucp_am_recv_data_nbx; a round ends when every send has completed (recur's ucx transport over
// links without RMA, docs/transfer.md).
//
// Build: cc -O2 -o /tmp/ucx_put_probe benchmarks/ucx_put_probe.c $(pkg-config --cflags --libs ucx)
// Usage: ucx_put_probe BLOCK BLOCKS ROUNDS user|alloc progress|idle|am  (UCX_TLS etc. as usual)
// e.g.   timeout 20 /tmp/ucx_put_probe 1048576 32 4 alloc idle
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void die(const char* what, ucs_status_t s) {
  fprintf(stderr, "ucx_put_probe: %s: %s\n", what, ucs_status_string(s));
  exit(1);
}

// Length-prefixed messages over a pipe.
static void send_msg(int fd, const void* p, uint64_t n) {
  if (write(fd, &n, 8) != 8 || write(fd, p, n) != (ssize_t)n) exit(2);
}
static void* recv_msg(int fd) {
  uint64_t n = 0, got = 0;
  if (read(fd, &n, 8) != 8) exit(2);
  char* p = malloc(n);
  while (got < n) {
    ssize_t r = read(fd, p + got, n - got);
    if (r <= 0) exit(2);
    got += (uint64_t)r;
  }
  return p;
}

static void start(ucp_context_h* ctx, ucp_worker_h* worker) {
  ucp_config_t* config;
  ucs_status_t s = ucp_config_read(NULL, NULL, &config);
  if (s != UCS_OK) die("config", s);
  ucp_params_t p = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_RMA | UCP_FEATURE_AM};
  s = ucp_init(&p, config, ctx);
  ucp_config_release(config);
  if (s != UCS_OK) die("init", s);
  ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE, .thread_mode = UCS_THREAD_MODE_SINGLE};
  if ((s = ucp_worker_create(*ctx, &wp, worker)) != UCS_OK) die("worker", s);
}

// The target's side of mode `am`.
static ucp_worker_h am_worker;
static char* am_base;
static uint64_t am_bytes;
static void am_received(void* request, ucs_status_t s, size_t length, void* user) {
  (void)s, (void)length, (void)user;
  ucp_request_free(request);
}
static ucs_status_t am_block(void* arg, const void* header, size_t header_length, void* data, size_t length,
                             const ucp_am_recv_param_t* param) {
  (void)arg;
  uint64_t offset = 0;
  if (header_length != sizeof offset) return UCS_OK;
  memcpy(&offset, header, sizeof offset);
  if (offset > am_bytes || length > am_bytes - offset) return UCS_OK;
  if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
    memcpy(am_base + offset, data, length);
    return UCS_OK;
  }
  ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK, .cb.recv_am = am_received};
  ucs_status_ptr_t q = ucp_am_recv_data_nbx(am_worker, data, am_base + offset, length, &p);
  if (UCS_PTR_IS_ERR(q)) die("am_recv_data", UCS_PTR_STATUS(q));
  return UCS_OK;
}

static void target(size_t bytes, int allocate, int progress, int to_initiator, int from_initiator) {
  ucp_context_h ctx;
  ucp_worker_h worker;
  start(&ctx, &worker);
  ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                                           UCP_MEM_MAP_PARAM_FIELD_FLAGS,
                             .length = bytes};
  if (allocate) {
    mp.flags = UCP_MEM_MAP_ALLOCATE;
  } else {
    mp.address = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(mp.address, 0, bytes);
  }
  ucp_mem_h memh;
  ucs_status_t s = ucp_mem_map(ctx, &mp, &memh);
  if (s != UCS_OK) die("mem_map", s);
  ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
  ucp_mem_query(memh, &attr);
  void* rkey;
  size_t rkey_bytes;
  ucp_address_t* address;
  size_t address_bytes;
  if ((s = ucp_rkey_pack(ctx, memh, &rkey, &rkey_bytes)) != UCS_OK) die("rkey_pack", s);
  if ((s = ucp_worker_get_address(worker, &address, &address_bytes)) != UCS_OK) die("address", s);
  uint64_t base = (uint64_t)(uintptr_t)attr.address;
  am_worker = worker;
  am_base = attr.address;
  am_bytes = bytes;
  ucp_am_handler_param_t hp = {.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB,
                               .id = 1, .cb = am_block};
  if ((s = ucp_worker_set_am_recv_handler(worker, &hp)) != UCS_OK) die("am handler", s);
  send_msg(to_initiator, address, address_bytes);
  send_msg(to_initiator, rkey, rkey_bytes);
  send_msg(to_initiator, &base, sizeof base);
  fcntl(from_initiator, F_SETFL, O_NONBLOCK);
  char done;
  while (read(from_initiator, &done, 1) != 1) {
    if (progress) ucp_worker_progress(worker);
    else usleep(1000);
  }
  exit(0);
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s BLOCK BLOCKS ROUNDS user|alloc progress|idle|am\n", argv[0]);
    return 1;
  }
  const size_t block = strtoull(argv[1], NULL, 10);
  const int blocks = atoi(argv[2]), rounds = atoi(argv[3]);
  const int allocate = strcmp(argv[4], "alloc") == 0, am = strcmp(argv[5], "am") == 0;
  const int progress = am || strcmp(argv[5], "progress") == 0;
  const size_t bytes = block * (size_t)blocks;
  int to_initiator[2], from_initiator[2];
  if (block == 0 || blocks <= 0 || pipe(to_initiator) != 0 || pipe(from_initiator) != 0) return 1;
  pid_t child = fork();
  if (child == 0) target(bytes, allocate, progress, to_initiator[1], from_initiator[0]);

  ucp_context_h ctx;
  ucp_worker_h worker;
  start(&ctx, &worker);
  void* address = recv_msg(to_initiator[0]);
  void* packed = recv_msg(to_initiator[0]);
  uint64_t base = *(uint64_t*)recv_msg(to_initiator[0]);
  ucp_ep_params_t ep_params = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS, .address = address};
  ucp_ep_h ep;
  ucp_rkey_h rkey;
  ucs_status_t s = ucp_ep_create(worker, &ep_params, &ep);
  if (s != UCS_OK) die("ep_create", s);
  if ((s = ucp_ep_rkey_unpack(ep, packed, &rkey)) != UCS_OK) die("rkey_unpack", s);
  ucp_ep_print_info(ep, stdout);
  void* mapped = NULL;
  printf("ucp_rkey_ptr: %s\n", ucs_status_string(ucp_rkey_ptr(rkey, base, &mapped)));
  fflush(stdout);
  char* source = malloc(bytes);
  memset(source, 7, bytes);
  ucs_status_ptr_t* sends = calloc((size_t)blocks, sizeof *sends);
  for (int r = 0; r < rounds && am; ++r) {
    const double t0 = now_s();
    uint64_t offsets[blocks];
    for (int i = 0; i < blocks; ++i) {
      offsets[i] = (uint64_t)i * block;
      ucp_request_param_t rndv = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_AM_SEND_FLAG_RNDV};
      sends[i] = ucp_am_send_nbx(ep, 1, &offsets[i], sizeof offsets[i], source + offsets[i], block, &rndv);
      if (UCS_PTR_IS_ERR(sends[i])) die("am_send", UCS_PTR_STATUS(sends[i]));
    }
    for (int i = 0; i < blocks; ++i) {
      if (!UCS_PTR_IS_PTR(sends[i])) continue;
      while (ucp_request_check_status(sends[i]) == UCS_INPROGRESS) ucp_worker_progress(worker);
      ucp_request_free(sends[i]);
    }
    printf("round %d: %.3f GB/s\n", r, (double)bytes / (now_s() - t0) / 1e9);
    fflush(stdout);
  }
  for (int r = 0; r < rounds && !am; ++r) {
    const double t0 = now_s();
    for (int i = 0; i < blocks; ++i) {
      ucp_request_param_t none = {0};
      ucs_status_ptr_t q = ucp_put_nbx(ep, source + (size_t)i * block, block, base + (uint64_t)i * block, rkey, &none);
      if (UCS_PTR_IS_ERR(q)) die("put", UCS_PTR_STATUS(q));
      if (UCS_PTR_IS_PTR(q)) ucp_request_free(q);
    }
    ucp_request_param_t none = {0};
    ucs_status_ptr_t f = ucp_ep_flush_nbx(ep, &none);
    if (UCS_PTR_IS_ERR(f)) die("flush", UCS_PTR_STATUS(f));
    if (UCS_PTR_IS_PTR(f)) {
      while (ucp_request_check_status(f) == UCS_INPROGRESS) ucp_worker_progress(worker);
      ucp_request_free(f);
    }
    printf("round %d: %.3f GB/s\n", r, (double)bytes / (now_s() - t0) / 1e9);
    fflush(stdout);
  }
  if (write(from_initiator[1], "x", 1) != 1) return 2;
  waitpid(child, NULL, 0);
  return 0;
}
