#include "transfer/kv_transfer.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "trace/trace.h"
#include "transfer/transfer_test_util.h"

namespace recur::transfer {
namespace {

using namespace std::chrono_literals;
using testing::fill_pattern;
using testing::has_pattern;
using testing::unique_segment;

constexpr int kLayers = 8;
constexpr int kBlocks = 4;
constexpr size_t kBlockBytes = 4096;

// A prefill engine and a decode engine in one process, joined by shared memory or TCP, with a
// fake 8-layer KV (4 blocks of 4 KiB per layer) on the prefill side.
struct KvPair {
  explicit KvPair(bool tcp) {
    decode = std::move(*TransferEngine::create({unique_segment(tcp ? "kv-dec-tcp" : "kv-dec"), tcp ? "127.0.0.1:0" : ""}));
    prefill = std::move(*TransferEngine::create({unique_segment(tcp ? "kv-pre-tcp" : "kv-pre")}));
    area = static_cast<std::byte*>(*decode->allocate_shared(layout.sequence_bytes() * 2));
    region = *decode->register_memory(area, layout.sequence_bytes() * 2, "cpu:0");
    kv = AlignedBuffer(size_t(kLayers) * kBlocks * kBlockBytes, true);
    EXPECT_TRUE(prefill->register_memory(kv.data(), kv.size(), "cpu:0"));
    auto seg = prefill->open_segment(tcp ? fmt::format("127.0.0.1:{}/{}", decode->port(), decode->segment_name())
                                         : decode->segment_name());
    EXPECT_TRUE(seg) << seg.error().message();
    peer = *seg;
  }
  std::byte* page(int layer, int block) { return kv.data() + (size_t(layer) * kBlocks + size_t(block)) * kBlockBytes; }
  std::vector<KvPage> pages(int layer, size_t bytes = kBlockBytes) {
    std::vector<KvPage> out;
    for (int b = 0; b < kBlocks; ++b) out.push_back({page(layer, b), bytes});
    return out;
  }

  KvLayout layout{kLayers, kBlocks, kBlockBytes};
  std::unique_ptr<TransferEngine> decode, prefill;
  std::byte* area = nullptr;
  RegionInfo region;
  AlignedBuffer kv;
  SegmentHandle peer = -1;
};

// Prefill "computes" layer L, sends it, and computes layer L+1 only after decode has received
// layer L: so decode must get each layer on its own, before the next exists, in layer order.
void layer_by_layer(bool tcp) {
  KvPair p(tcp);
  KvSender sender(*p.prefill, p.peer, p.layout);
  KvReceiver receiver({p.area, p.layout.sequence_bytes() * 2}, p.layout);
  const int64_t seq = 3;
  const uint64_t generation = 1;
  const size_t area_offset = p.layout.sequence_bytes();  // the second sequence slot
  ASSERT_TRUE(sender.begin_sequence(seq, p.region.segment_offset + area_offset, generation));

  std::mutex mu;
  std::condition_variable cv;
  int received = -1;
  std::vector<int> order;
  std::vector<std::string> errors;
  std::thread decode([&] {
    std::vector<std::byte> out(size_t(kBlocks) * kBlockBytes);
    for (int layer = 0; layer < kLayers; ++layer) {
      std::vector<KvPageOut> pages;
      for (int b = 0; b < kBlocks; ++b) pages.push_back({out.data() + size_t(b) * kBlockBytes, kBlockBytes});
      Status s = receiver.receive_layer(seq, generation, area_offset, layer, pages, 20s);
      std::lock_guard lock(mu);
      if (!s) errors.push_back(s.error().message());
      for (int b = 0; b < kBlocks; ++b)
        if (!has_pattern(out.data() + size_t(b) * kBlockBytes, kBlockBytes, uint64_t(layer * 100 + b)))
          errors.push_back(fmt::format("layer {} block {}: wrong data", layer, b));
      if (layer + 1 < kLayers && receiver.layer_ready(area_offset, layer + 1, generation))
        errors.push_back(fmt::format("layer {} arrived before prefill computed it", layer + 1));
      order.push_back(layer);
      received = layer;
      cv.notify_all();
    }
  });
  for (int layer = 0; layer < kLayers; ++layer) {
    for (int b = 0; b < kBlocks; ++b) fill_pattern(p.page(layer, b), kBlockBytes, uint64_t(layer * 100 + b));
    ASSERT_TRUE(sender.send_layer(seq, layer, p.pages(layer)));
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 30s, [&] { return received >= layer; })) << "layer " << layer << " never arrived";
  }
  decode.join();
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  auto done = sender.completed_layers(seq);
  ASSERT_TRUE(done);
  Status finished = sender.finish_sequence(seq, 20s);
  EXPECT_TRUE(finished) << finished.error().message();
}

TEST(KvTransfer, LayerByLayerOverSharedMemory) { layer_by_layer(false); }
TEST(KvTransfer, LayerByLayerOverTcp) { layer_by_layer(true); }

TEST(KvTransfer, CorruptedOrTruncatedBlocksAreRejectedNotUsed) {
  KvPair p(false);
  KvSender sender(*p.prefill, p.peer, p.layout);
  KvReceiver receiver({p.area, p.layout.sequence_bytes() * 2}, p.layout);
  ASSERT_TRUE(sender.begin_sequence(1, p.region.segment_offset, 9));
  for (int b = 0; b < kBlocks; ++b) fill_pattern(p.page(0, b), kBlockBytes, uint64_t(b));
  ASSERT_TRUE(sender.send_layer(1, 0, p.pages(0)));
  ASSERT_TRUE(sender.send_layer(1, 1, p.pages(1, kBlockBytes / 2)));  // shorter than decode expects
  ASSERT_TRUE(sender.finish_sequence(1, 20s));
  // A bit flipped in transit (here: in the receive area after arrival).
  p.area[p.layout.slot_offset(0, 2) + kKvBlockHeaderBytes + 100] ^= std::byte{0x10};
  std::vector<std::byte> out(size_t(kBlocks) * kBlockBytes);
  std::vector<KvPageOut> pages;
  for (int b = 0; b < kBlocks; ++b) pages.push_back({out.data() + size_t(b) * kBlockBytes, kBlockBytes});
  Status s = receiver.receive_layer(1, 9, 0, 0, pages, 20s);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code(), ErrorCode::kParse);
  EXPECT_NE(s.error().message().find("seq 1 layer 0 block 2"), std::string::npos) << s.error().message();
  EXPECT_NE(s.error().message().find("checksum"), std::string::npos) << s.error().message();
  s = receiver.receive_layer(1, 9, 0, 1, pages, 20s);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("length 2048, expected 4096"), std::string::npos) << s.error().message();
  // A layer never sent times out (a generous bound: the point is that it does not hang).
  s = receiver.receive_layer(1, 9, 0, 2, pages, 10ms);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code(), ErrorCode::kTimeout);
  // Misuse is refused up front.
  EXPECT_FALSE(sender.send_layer(1, 0, p.pages(0))) << "sequence finished";
  EXPECT_FALSE(sender.begin_sequence(2, p.region.segment_offset, 0)) << "generation 0";
}

TEST(KvTransfer, TraceHasZonesAndFlowsProducedSentReceived) {
  trace::reset();
  trace::set_enabled(true);
  {
    KvPair p(false);
    KvSender sender(*p.prefill, p.peer, p.layout);
    KvReceiver receiver({p.area, p.layout.sequence_bytes() * 2}, p.layout);
    ASSERT_TRUE(sender.begin_sequence(4, p.region.segment_offset, 1));
    ASSERT_TRUE(sender.send_layer(4, 0, p.pages(0)));
    std::vector<std::byte> out(size_t(kBlocks) * kBlockBytes);
    std::vector<KvPageOut> pages;
    for (int b = 0; b < kBlocks; ++b) pages.push_back({out.data() + size_t(b) * kBlockBytes, kBlockBytes});
    ASSERT_TRUE(receiver.receive_layer(4, 1, 0, 0, pages, 20s));
    ASSERT_TRUE(sender.finish_sequence(4, 20s));
  }
  trace::set_enabled(false);
  trace::EventTable t = trace::capture();
  int submits = 0, sends = 0, recvs = 0, flow_begin = 0, flow_step = 0, flow_end = 0;
  uint64_t flow0 = kv_block_flow_id({4, 0, 0});
  for (size_t i = 0; i < t.size(); ++i) {
    std::string_view n = t.name(i);
    if (n == "kv_transfer.submit") ++submits;
    if (n == "kv_transfer.send") ++sends;
    if (n == "kv_transfer.recv") ++recvs;
    if (n == "kv_block" && t.id(i) == flow0) {
      flow_begin += t.phase(i) == 's';
      flow_step += t.phase(i) == 't';
      flow_end += t.phase(i) == 'f';
    }
  }
  EXPECT_EQ(submits, 1);
  EXPECT_EQ(sends, 3 * kBlocks) << "payload, header and flag per block";
  EXPECT_EQ(recvs, kBlocks);
  EXPECT_EQ(flow_begin, 1);
  EXPECT_EQ(flow_step, 1);
  EXPECT_EQ(flow_end, 1);
  bool named = false;
  for (const trace::Track& track : t.tracks()) named |= t.strings().str(track.thread_name) == "kv_transfer";
  EXPECT_TRUE(named) << "the transfer thread is named kv_transfer";
}

}  // namespace
}  // namespace recur::transfer
