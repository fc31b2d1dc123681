#include "core/tensor.h"

#include <gtest/gtest.h>

#include <vector>

namespace recur {
namespace {

TEST(TensorView, ContiguousStridesAndOffsets) {
  std::vector<float> data(24);
  TensorView t = TensorView::of(data.data(), {2, 3, 4});
  EXPECT_EQ(t.rank(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.stride(0), 12);
  EXPECT_EQ(t.stride(1), 4);
  EXPECT_EQ(t.stride(2), 1);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.offset({1, 2, 3}), 23);
  EXPECT_EQ(t.span_bytes(), 24 * sizeof(float));
  EXPECT_EQ(t.to_string(), "f32[2,3,4]");
}

TEST(TensorView, SliceTransposeReshape) {
  std::vector<float> data(24);
  for (int i = 0; i < 24; ++i) data[i] = float(i);
  TensorView t = TensorView::of(data.data(), {2, 3, 4});

  auto s = t.slice(1, 1, 3);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->dim(1), 2);
  EXPECT_EQ(s->at<float>({1, 0, 2}), 18.0f);  // 12 + 4*1 + 2
  EXPECT_FALSE(s->is_contiguous());

  auto tr = t.transpose(0, 2);
  ASSERT_TRUE(tr.has_value());
  EXPECT_EQ(tr->dim(0), 4);
  EXPECT_EQ(tr->at<float>({3, 2, 1}), t.at<float>({1, 2, 3}));
  EXPECT_FALSE(tr->is_contiguous());

  const int64_t flat[] = {6, 4};
  auto r = t.reshape(flat);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->at<float>({5, 3}), 23.0f);
  EXPECT_FALSE(tr->reshape(flat).has_value()) << "reshape of a transposed view must fail";
}

TEST(TensorView, RejectsBadShapes) {
  float x = 0;
  const int64_t neg[] = {2, -1};
  EXPECT_EQ(TensorView::make(&x, DType::kF32, neg).error().code(), ErrorCode::kInvalidArgument);
  const int64_t big[] = {1, 1, 1, 1, 1, 1, 1};
  EXPECT_FALSE(TensorView::make(&x, DType::kF32, big).has_value());
  const int64_t two[] = {2, 2};
  const int64_t one_stride[] = {1};
  EXPECT_FALSE(TensorView::make(&x, DType::kF32, two, one_stride).has_value());
  TensorView t = TensorView::of(&x, {1});
  EXPECT_FALSE(t.slice(0, 0, 2).has_value());
  EXPECT_FALSE(t.slice(1, 0, 1).has_value());
  const int64_t wrong[] = {2};
  auto err = t.reshape(wrong);
  ASSERT_FALSE(err.has_value());
  EXPECT_NE(err.error().message().find("f32[1]"), std::string::npos) << err.error().message();
}

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kFP8E4M3,
                  DType::kFP8E5M2, DType::kI32, DType::kI8, DType::kU8}) {
    auto parsed = parse_dtype(dtype_name(t));
    ASSERT_TRUE(parsed.has_value()) << dtype_name(t);
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_FALSE(parse_dtype("f33").has_value());
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kFP8E4M3), 1u);
}

}  // namespace
}  // namespace recur
