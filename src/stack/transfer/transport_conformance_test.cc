// The transfer engine's conformance tests, run for every transport: shared memory, TCP, UCX with
// the transports UCX picks by itself (here: shared memory and CMA) and UCX told to use TCP only
// (UCX_TLS=tcp, read when an engine creates its UCX context). A UCX case is skipped, saying so,
// where the build has no UCX.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/aligned_buffer.h"
#include "transfer/frame.h"
#include "transfer/frame_io.h"
#include "transfer/socket_io.h"
#include "transfer/transfer_engine.h"
#include "transfer/transfer_test_util.h"

namespace recur::transfer {
namespace {

using namespace std::chrono_literals;
using testing::fill_pattern;
using testing::has_pattern;
using testing::unique_segment;

enum class Transport { kShm, kTcp, kUcx, kUcxTcp };

const char* transport_name(Transport t) {
  switch (t) {
    case Transport::kShm: return "shm";
    case Transport::kTcp: return "tcp";
    case Transport::kUcx: return "ucx";
    case Transport::kUcxTcp: return "ucx_tcp";
  }
  return "?";
}

bool is_ucx(Transport t) { return t == Transport::kUcx || t == Transport::kUcxTcp; }
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class Conformance : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    if (is_ucx(GetParam()) && !ucx_transport_built()) GTEST_SKIP() << "this build has no UCX (RECUR_WITH_UCX / libucx-dev)";
    // Every engine this process creates from now on reads it (forked peers inherit it).
    if (GetParam() == Transport::kUcxTcp) ::setenv("UCX_TLS", "tcp", 1);
    else ::unsetenv("UCX_TLS");
  }
  Transport t() const { return GetParam(); }
  // The serving engine's options for this transport.
  EngineOptions serving(const std::string& name, std::string key = "", int port = 0) const {
    EngineOptions o{.segment_name = name, .timeout = 5000ms, .peer_key = std::move(key)};
    if (t() != Transport::kShm) o.listen = fmt::format("127.0.0.1:{}", port);
    o.ucx = is_ucx(t());
    return o;
  }
  std::string address(const TransferEngine& server) const { return address(server.segment_name(), server.port()); }
  std::string address(const std::string& name, int port) const {
    if (t() == Transport::kShm) return name;
    return fmt::format("{}127.0.0.1:{}/{}", is_ucx(t()) ? "ucx://" : "", port, name);
  }
};

std::unique_ptr<TransferEngine> create(const EngineOptions& o) {
  auto e = TransferEngine::create(o);
  EXPECT_TRUE(e) << e.error().message();
  return e ? std::move(*e) : nullptr;
}

// The peer in its own process. It watches its ready flag while the parent writes: the moment
// the flag shows, all the data must be there (the flag is stored only after it).
int flag_watching_peer(const EngineOptions& o, testing::TestPipe& to_parent, testing::TestPipe& to_child) {
  auto e = TransferEngine::create(o);
  if (!e) return 10;
  constexpr size_t kData = 4 << 20;
  void* mem = *(*e)->allocate_shared(kData + 8);
  auto region = (*e)->register_memory(mem, kData + 8, "cpu:0");
  if (!region) return 11;
  to_parent.send(region->segment_offset);
  to_parent.send(uint64_t((*e)->port()));
  auto* flag = reinterpret_cast<uint64_t*>(static_cast<std::byte*>(mem) + kData);
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (std::atomic_ref<uint64_t>(*flag).load(std::memory_order_acquire) != 77)
    if (std::chrono::steady_clock::now() > until) return 12;
  const bool ok = has_pattern(mem, kData, 7);
  fill_pattern(mem, kData, 8);
  to_parent.send(ok ? 1 : 2);
  to_child.receive();  // until the parent is done
  return ok ? 0 : 13;
}

// A forked flag_watching_peer and where its region is.
struct ForkedPeer {
  testing::TestPipe to_parent, to_child;
  pid_t child = -1;
  uint64_t offset = 0;
  int port = 0;
  void start(const EngineOptions& options) {
    child = testing::fork_peer([&] { return flag_watching_peer(options, to_parent, to_child); });
    offset = to_parent.receive();
    port = int(to_parent.receive());
  }
};

// A client engine with `bytes` of registered memory and `address` open.
struct Client {
  std::unique_ptr<TransferEngine> engine;
  AlignedBuffer local;
  SegmentHandle peer = -1;
  Client(const std::string& stem, const std::string& address, size_t bytes, std::chrono::milliseconds timeout)
      : engine(create({.segment_name = unique_segment(stem), .timeout = timeout})), local(bytes, true) {
    EXPECT_TRUE(engine->register_memory(local.data(), local.size(), "cpu:0"));
    auto opened = engine->open_segment(address);
    EXPECT_TRUE(opened) << opened.error().message();
    peer = opened.value_or(-1);
  }
};

TEST_P(Conformance, FlagIsStoredOnlyAfterTheDataAcrossProcesses) {
  const std::string name = unique_segment(std::string("flag-") + transport_name(t()));
  testing::TestPipe to_parent, to_child;
  const EngineOptions peer_options = serving(name);
  pid_t child = testing::fork_peer([&] { return flag_watching_peer(peer_options, to_parent, to_child); });
  const uint64_t offset = to_parent.receive();
  const int port = int(to_parent.receive());
  ASSERT_NE(offset, 0u);
  auto e = create({.segment_name = unique_segment("flag-writer")});
  constexpr size_t kData = 4 << 20, kPiece = 256 << 10;
  AlignedBuffer local(kData + 8, true);
  ASSERT_TRUE(e->register_memory(local.data(), local.size(), "cpu:0"));
  auto peer = e->open_segment(address(name, port));
  ASSERT_TRUE(peer) << peer.error().message();
  auto how = e->segment_transport(*peer);
  ASSERT_TRUE(how) << how.error().message();
  EXPECT_TRUE(how->starts_with(is_ucx(t()) ? "ucx" : transport_name(t()))) << *how;
  std::printf("transport %s: %s\n", transport_name(t()), how->c_str());  // which lanes UCX picked, in the log
  fill_pattern(local.data(), kData, 7);
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(local.data() + kData)).store(77);
  std::vector<TransferRequest> writes;
  for (size_t i = 0; i < kData / kPiece; ++i)
    writes.push_back({TransferOpcode::kWrite, local.data() + i * kPiece, *peer, offset + i * kPiece, kPiece});
  writes.push_back({TransferOpcode::kStoreFlag, local.data() + kData, *peer, offset + kData, 8});
  BatchId w = testing::run_batch(*e, writes);
  auto ok = e->wait_batch(w, 0ms);
  EXPECT_TRUE(ok) << ok.error().message();
  EXPECT_EQ(to_parent.receive(), 1u) << "the peer saw the flag before all the data";
  // Reads see what the peer wrote since.
  BatchId r = testing::run_batch(*e, {{TransferOpcode::kRead, local.data(), *peer, offset, kData}});
  ok = e->wait_batch(r, 0ms);
  EXPECT_TRUE(ok) << ok.error().message();
  EXPECT_TRUE(has_pattern(local.data(), kData, 8));
  EXPECT_EQ(e->status(r, 0)->bytes, kData);
  to_child.send(2);
  EXPECT_EQ(testing::wait_exit_code(child), 0);
}

TEST_P(Conformance, RangeErrorsNameTheSpotAndStopTheBatchToThatSegment) {
  auto server = create(serving(unique_segment(std::string("range-") + transport_name(t()))));
  void* mem = *server->allocate_shared(4096);
  RegionInfo region = *server->register_memory(mem, 4096, "cpu:0");
  auto e = create({.segment_name = unique_segment("range-client")});
  AlignedBuffer local(4096, true);
  ASSERT_TRUE(e->register_memory(local.data(), local.size(), "cpu:0"));
  auto peer = e->open_segment(address(*server));
  ASSERT_TRUE(peer) << peer.error().message();
  BatchId b = testing::run_batch(*e, {{TransferOpcode::kWrite, local.data(), *peer, region.segment_offset + 4000, 200},
                                      {TransferOpcode::kWrite, local.data(), *peer, region.segment_offset, 16}});
  auto st = e->status(b, 0);
  EXPECT_EQ(st->state, TransferState::kFailed);
  EXPECT_TRUE(contains(st->error, fmt::format("segment {}: region {}: offset 4000 + length 200 is past its end",
                                              server->segment_name(), region.id)))
      << st->error;
  EXPECT_EQ(e->status(b, 1)->state, TransferState::kFailed);
  const std::string second = e->status(b, 1)->error;
  EXPECT_TRUE(contains(second, "not run") || contains(second, "not applied")) << second;
  // A region the peer never registered.
  BatchId u = testing::run_batch(*e, {{TransferOpcode::kRead, local.data(), *peer, segment_offset(region.id + 7, 0), 16}});
  st = e->status(u, 0);
  EXPECT_EQ(st->state, TransferState::kFailed);
  EXPECT_TRUE(contains(st->error, fmt::format("region {}", region.id + 7))) << st->error;
  // The segment still works for a request in range.
  fill_pattern(local.data(), 4096, 4);
  BatchId good = testing::run_batch(*e, {{TransferOpcode::kWrite, local.data(), *peer, region.segment_offset, 4096}});
  EXPECT_TRUE(e->wait_batch(good, 0ms));
  EXPECT_TRUE(has_pattern(mem, 4096, 4));
}

TEST_P(Conformance, RegionRegisteredAfterTheOpenIsReachable) {
  auto server = create(serving(unique_segment(std::string("late-") + transport_name(t()))));
  void* first = *server->allocate_shared(4096);
  ASSERT_TRUE(server->register_memory(first, 4096, "cpu:0"));
  auto e = create({.segment_name = unique_segment("late-client")});
  AlignedBuffer local(4096, true);
  ASSERT_TRUE(e->register_memory(local.data(), local.size(), "cpu:0"));
  auto peer = e->open_segment(address(*server));
  ASSERT_TRUE(peer) << peer.error().message();
  void* later = *server->allocate_shared(4096);
  RegionInfo region = *server->register_memory(later, 4096, "cpu:0");
  fill_pattern(local.data(), 4096, 5);
  BatchId b = testing::run_batch(*e, {{TransferOpcode::kWrite, local.data(), *peer, region.segment_offset, 4096}});
  auto ok = e->wait_batch(b, 0ms);
  EXPECT_TRUE(ok) << ok.error().message();
  EXPECT_TRUE(has_pattern(later, 4096, 5));
}

// A peer killed: requests to it fail ("peer gone") within a bounded time, nothing hangs, a later
// request tries to reconnect and fails at once, and the engine goes on serving other peers.
TEST_P(Conformance, PeerKilledIsReportedGoneAndTheEngineGoesOn) {
  const std::string name = unique_segment(std::string("gone-") + transport_name(t()));
  ForkedPeer forked;
  forked.start(serving(name));
  const pid_t child = forked.child;
  const uint64_t offset = forked.offset;
  Client client("gone-survivor", address(name, forked.port), 1 << 20, 60s);
  ASSERT_GE(client.peer, 0);
  auto& e = client.engine;
  auto& local = client.local;
  const auto peer = &client.peer;
  BatchId warm = testing::run_batch(*e, {{TransferOpcode::kWrite, local.data(), *peer, offset, 1 << 20}});
  EXPECT_TRUE(e->wait_batch(warm, 0ms));
  ::kill(child, SIGKILL);
  EXPECT_EQ(testing::wait_exit_code(child), 128 + SIGKILL);
  // One-sided transports learn of the death asynchronously (shm: the owner's pid; UCX: its control
  // connection closing): within a few ms, not the 60 s timeout.
  const auto killed = std::chrono::steady_clock::now();
  std::string error;
  while (error.empty() && std::chrono::steady_clock::now() - killed < 10s) {
    BatchId b = testing::run_batch(*e, {{TransferOpcode::kWrite, local.data(), *peer, offset, 1 << 20}}, 50s);
    auto st = *e->status(b, 0);
    EXPECT_NE(st.state, TransferState::kPending);
    if (st.state == TransferState::kFailed) error = st.error;
    else std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(contains(error, "peer gone")) << error;
  EXPECT_LT(std::chrono::steady_clock::now() - killed, 10s);
  BatchId again = testing::run_batch(*e, {{TransferOpcode::kWrite, local.data(), *peer, offset, 64}});
  auto st = e->status(again, 0);
  EXPECT_EQ(st->state, TransferState::kFailed);
  EXPECT_TRUE(contains(st->error, "peer gone")) << st->error;
  auto other = create(serving(unique_segment(std::string("gone-other-") + transport_name(t()))));
  void* mem = *other->allocate_shared(4096);
  RegionInfo region = *other->register_memory(mem, 4096, "cpu:0");
  auto next = e->open_segment(address(*other));
  ASSERT_TRUE(next) << next.error().message();
  fill_pattern(local.data(), 4096, 3);
  BatchId ok = testing::run_batch(*e, {{TransferOpcode::kWrite, local.data(), *next, region.segment_offset, 4096}});
  EXPECT_TRUE(e->wait_batch(ok, 0ms));
  EXPECT_TRUE(has_pattern(mem, 4096, 3));
}

// A peer killed while a batch of large writes is on its way (over UCX without RMA: in the middle
// of rendezvous receives): every request ends, completed before the kill or failed ("peer gone",
// or not run after a failure), within a bounded time; none stays pending.
TEST_P(Conformance, PeerKilledMidTransferEndsEveryRequest) {
  const std::string name = unique_segment(std::string("midway-") + transport_name(t()));
  ForkedPeer forked;
  forked.start(serving(name));
  constexpr size_t kBlock = 4 << 20, kBlocks = 48;
  Client client("midway-writer", address(name, forked.port), kBlock, 60s);
  ASSERT_GE(client.peer, 0);
  const std::vector<TransferRequest> writes(kBlocks, {TransferOpcode::kWrite, client.local.data(), client.peer,
                                                      forked.offset, kBlock});
  BatchId b = *client.engine->allocate_batch(writes.size());
  ASSERT_TRUE(client.engine->submit(b, writes));
  std::this_thread::sleep_for(20ms);
  ::kill(forked.child, SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  (void)client.engine->wait_batch(b, 30s);
  EXPECT_LT(std::chrono::steady_clock::now() - killed, 10s);
  size_t failed = 0;
  for (size_t i = 0; i < kBlocks; ++i) {
    auto st = *client.engine->status(b, i);
    EXPECT_NE(st.state, TransferState::kPending) << "request " << i;
    if (st.state != TransferState::kFailed) continue;
    ++failed;
    EXPECT_TRUE(contains(st.error, "peer gone") || contains(st.error, "not run") || contains(st.error, "not applied"))
        << "request " << i << ": " << st.error;
  }
  // 192 MiB over TCP take far longer than 20 ms; shared memory may be done by the kill.
  if (t() == Transport::kTcp || t() == Transport::kUcxTcp) {
    EXPECT_GT(failed, 0u);
  }
  EXPECT_EQ(testing::wait_exit_code(forked.child), 128 + SIGKILL);
}

// A peer that stops (SIGSTOP) with a read outstanding: transports that need the peer to answer
// fail the request once the timeout passes; one-sided ones complete it without the peer. Never
// a hang.
TEST_P(Conformance, StoppedPeerTimesOutOrIsNotNeeded) {
  const std::string name = unique_segment(std::string("stop-") + transport_name(t()));
  ForkedPeer forked;
  forked.start(serving(name));
  const pid_t child = forked.child;
  const uint64_t offset = forked.offset;
  Client client("stop-reader", address(name, forked.port), 1 << 20, 300ms);
  ASSERT_GE(client.peer, 0);
  auto& e = client.engine;
  auto& local = client.local;
  const auto peer = &client.peer;
  BatchId warm = testing::run_batch(*e, {{TransferOpcode::kRead, local.data(), *peer, offset, 4096}});
  EXPECT_TRUE(e->wait_batch(warm, 0ms));
  const std::string lanes = e->segment_transport(*peer).value_or("?");  // while connected
  ::kill(child, SIGSTOP);
  int status = 0;
  ::waitpid(child, &status, WUNTRACED);
  const auto start = std::chrono::steady_clock::now();
  BatchId b = testing::run_batch(*e, {{TransferOpcode::kRead, local.data(), *peer, offset, 1 << 20}}, 20s);
  auto st = *e->status(b, 0);
  const bool needs_peer = t() == Transport::kTcp || t() == Transport::kUcxTcp;
  if (t() == Transport::kUcx) {
    // Depends on the lanes UCX picked. Over its posix/sysv shared memory the read is one-sided
    // because UCX allocated the peer's memory (allocate_shared of an engine serving UCX): for
    // memory it did not allocate, UCX 1.13 emulates RMA with messages the peer must progress.
    // Elsewhere (RDMA, CMA: no peer needed; anything emulated: the timeout) either outcome.
    if (contains(lanes, "posix/memory") || contains(lanes, "sysv/memory"))
      EXPECT_EQ(st.state, TransferState::kCompleted) << lanes << ": " << st.error;
    else
      EXPECT_TRUE(st.state == TransferState::kCompleted || contains(st.error, "within 300 ms")) << st.error;
  } else if (needs_peer) {
    EXPECT_EQ(st.state, TransferState::kFailed);
    EXPECT_TRUE(contains(st.error, "within 300 ms")) << st.error;
    EXPECT_EQ(st.code, ErrorCode::kTimeout) << st.error;
  } else {
    EXPECT_EQ(st.state, TransferState::kCompleted) << st.error;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  ::kill(child, SIGKILL);
  testing::wait_exit_code(child);
}

// The peer restarts on the same address: the same segment handle reaches the new one.
TEST_P(Conformance, ReconnectsToARestartedPeer) {
  if (t() == Transport::kShm) GTEST_SKIP() << "a shared-memory segment is its owner's: a restarted peer is a new open_segment";
  const std::string name = unique_segment(std::string("restart-") + transport_name(t()));
  auto server = create(serving(name));
  const int port = server->port();
  void* mem = *server->allocate_shared(4096);
  RegionInfo region = *server->register_memory(mem, 4096, "cpu:0");
  auto e = create({.segment_name = unique_segment("restart-client")});
  AlignedBuffer local(4096, true);
  ASSERT_TRUE(e->register_memory(local.data(), local.size(), "cpu:0"));
  auto peer = e->open_segment(address(name, port));
  ASSERT_TRUE(peer) << peer.error().message();
  BatchId first = testing::run_batch(*e, {{TransferOpcode::kWrite, local.data(), *peer, region.segment_offset, 4096}});
  EXPECT_TRUE(e->wait_batch(first, 0ms));
  server.reset();
  std::this_thread::sleep_for(50ms);  // UCX: the control connection's close is noticed
  BatchId gone = testing::run_batch(*e, {{TransferOpcode::kWrite, local.data(), *peer, region.segment_offset, 4096}});
  EXPECT_EQ(e->status(gone, 0)->state, TransferState::kFailed);
  server = create(serving(name, "", port));
  ASSERT_TRUE(server);
  mem = *server->allocate_shared(4096);
  region = *server->register_memory(mem, 4096, "cpu:0");
  fill_pattern(local.data(), 4096, 6);
  BatchId back = testing::run_batch(*e, {{TransferOpcode::kWrite, local.data(), *peer, region.segment_offset, 4096}});
  auto ok = e->wait_batch(back, 0ms);
  EXPECT_TRUE(ok) << ok.error().message();
  EXPECT_TRUE(has_pattern(mem, 4096, 6));
}

// With a peer key, nothing (for UCX: no worker address, no remote key) reaches a client that
// cannot prove it.
TEST_P(Conformance, PeerKeyGuardsTheSetup) {
  if (t() == Transport::kShm) GTEST_SKIP() << "shared memory is guarded by the host's file permissions, not a key";
  auto server = create(serving(unique_segment(std::string("key-") + transport_name(t())), "right-key"));
  void* mem = *server->allocate_shared(4096);
  RegionInfo region = *server->register_memory(mem, 4096, "cpu:0");
  for (const char* key : {"", "wrong-key"}) {
    auto e = create({.segment_name = unique_segment("key-client"), .peer_key = key});
    auto peer = e->open_segment(address(*server));
    ASSERT_FALSE(peer) << "key '" << key << "'";
    EXPECT_TRUE(contains(peer.error().message(), "peer authentication failed")) << peer.error().message();
  }
  auto e = create({.segment_name = unique_segment("key-client"), .peer_key = "right-key"});
  AlignedBuffer local(4096, true);
  ASSERT_TRUE(e->register_memory(local.data(), local.size(), "cpu:0"));
  auto peer = e->open_segment(address(*server));
  ASSERT_TRUE(peer) << peer.error().message();
  fill_pattern(local.data(), 4096, 9);
  BatchId b = testing::run_batch(*e, {{TransferOpcode::kWrite, local.data(), *peer, region.segment_offset, 4096}});
  EXPECT_TRUE(e->wait_batch(b, 0ms));
  EXPECT_TRUE(has_pattern(mem, 4096, 9));
}

TEST_P(Conformance, UnknownSegmentNameIsRefused) {
  auto server = create(serving(unique_segment(std::string("named-") + transport_name(t()))));
  auto e = create({.segment_name = unique_segment("asker")});
  auto peer = e->open_segment(address(unique_segment("someone-else"), server->port()));
  ASSERT_FALSE(peer);
  EXPECT_EQ(peer.error().code(), ErrorCode::kNotFound) << peer.error().message();
}

INSTANTIATE_TEST_SUITE_P(Transports, Conformance,
                         ::testing::Values(Transport::kShm, Transport::kTcp, Transport::kUcx, Transport::kUcxTcp),
                         [](const auto& info) { return std::string(transport_name(info.param)); });

// ---- UCX specifics ----

TEST(UcxSetup, ConnectBeforeTheHandshakeIsRefused) {
  auto server = create({.segment_name = unique_segment("ucx-early"), .listen = "127.0.0.1:0", .peer_key = "k",
                        .ucx = ucx_transport_built()});
  ASSERT_TRUE(server);
  auto fd = tcp_connect("127.0.0.1", server->port(), 5000ms);
  ASSERT_TRUE(fd);
  ASSERT_TRUE(send_frame(fd->get(), FrameOp::kUcxConnect, 1, 0, {}, "test"));
  FrameHeaderBytes raw;
  ASSERT_EQ(*recv_all(fd->get(), raw.data(), raw.size(), "test"), raw.size());
  FrameHeader reply = *decode_frame_header(raw);
  EXPECT_NE(reply.status, 0) << "no address or keys before the peer proved the key";
  std::string message(reply.length, '\0');
  ASSERT_EQ(*recv_all(fd->get(), message.data(), message.size(), "test"), message.size());
  EXPECT_TRUE(contains(message, "must start with hello")) << message;
}

// An engine serving UCX has UCX allocate its shared memory (one-sided over UCX's shared-memory
// transports): zeroed, registrable, and not freed while a region in it is registered.
TEST(UcxSetup, SharedMemoryOfAUcxServerIsUcxAllocated) {
  if (!ucx_transport_built()) GTEST_SKIP() << "this build has no UCX (RECUR_WITH_UCX / libucx-dev)";
  auto server = create({.segment_name = unique_segment("ucx-alloc"), .listen = "127.0.0.1:0", .ucx = true});
  ASSERT_TRUE(server);
  auto mem = server->allocate_shared(1 << 20);
  ASSERT_TRUE(mem) << mem.error().message();
  const auto* bytes = static_cast<const std::byte*>(*mem);
  EXPECT_TRUE(std::all_of(bytes, bytes + (1 << 20), [](std::byte b) { return b == std::byte{0}; }));
  auto region = server->register_memory(static_cast<std::byte*>(*mem) + 4096, 8192, "cpu:0");
  ASSERT_TRUE(region) << region.error().message();
  auto busy = server->free_shared(*mem);
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().code(), ErrorCode::kFailedPrecondition);
  EXPECT_TRUE(contains(busy.error().message(), "still registered")) << busy.error().message();
  ASSERT_TRUE(server->unregister_memory(static_cast<std::byte*>(*mem) + 4096));
  EXPECT_TRUE(server->free_shared(*mem));
  auto again = server->free_shared(*mem);
  ASSERT_FALSE(again);
  EXPECT_TRUE(contains(again.error().message(), "not an allocate_shared address")) << again.error().message();
}

TEST(UcxSetup, AServerWithoutUcxSaysSo) {
  if (!ucx_transport_built()) {
    auto e = TransferEngine::create({.segment_name = unique_segment("no-ucx"), .listen = "127.0.0.1:0", .ucx = true});
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().code(), ErrorCode::kUnsupported);
    EXPECT_TRUE(contains(e.error().message(), "not in this build")) << e.error().message();
    return;
  }
  auto server = create({.segment_name = unique_segment("tcp-only"), .listen = "127.0.0.1:0"});
  auto e = create({.segment_name = unique_segment("ucx-asker")});
  auto peer = e->open_segment(fmt::format("ucx://127.0.0.1:{}/{}", server->port(), server->segment_name()));
  ASSERT_FALSE(peer);
  EXPECT_TRUE(contains(peer.error().message(), "serves no UCX peers")) << peer.error().message();
  auto no_listener = TransferEngine::create({.segment_name = unique_segment("ucx-nolisten"), .ucx = true});
  ASSERT_FALSE(no_listener);
  EXPECT_TRUE(contains(no_listener.error().message(), "needs a listen address")) << no_listener.error().message();
}

}  // namespace
}  // namespace recur::transfer
