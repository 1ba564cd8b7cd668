// Tensors, views, casts, the allocator, Philox, device fallback and error messages.
#include <gtest/gtest.h>

#include <cstdlib>

#include <algorithm>
#include <cmath>

#include "tests/test_util.h"

#include "engine/core/bf16.h"
#include "engine/core/philox.h"
#include "engine/engine.h"

namespace sa {
namespace {

using testing::error_of;

TEST(Tensor, RowsViewSharesStorage) {
  Tensor t = Tensor::of({0, 1, 2, 3, 4, 5}, {3, 2});
  Tensor r = t.rows(1, 3);
  EXPECT_EQ(r.shape(), (Shape{2, 2}));
  EXPECT_EQ(r.values(), (std::vector<double>{2, 3, 4, 5}));
  r.data<float>()[0] = 42;
  EXPECT_EQ(t.values()[2], 42);
  EXPECT_THROW(t.rows(2, 4), Error);
}

TEST(Tensor, Bf16RoundTripRoundsToNearestEven) {
  // 1 + 2^-8 lies halfway between two bf16 values: ties go to the even mantissa (1.0).
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);
  Tensor x = Tensor::of({0.1, -3.75, 1e10, 0}, {4});
  Tensor b = x.to(DType::BF16);
  EXPECT_EQ(b.dtype(), DType::BF16);
  std::vector<double> back = b.to(DType::F32).values();
  EXPECT_EQ(back[1], -3.75);
  EXPECT_NEAR(back[0], 0.1, 0.1 / 128);
  EXPECT_NEAR(back[2], 1e10, 1e10 / 128);
}

TEST(Tensor, Bf16MatmulAccumulatesInF32AndPassesGradients) {
  Tensor a = Tensor::of({0.5, -1.25, 2.0, 0.75, 1.5, -0.5}, {2, 3}).set_requires_grad();
  Tensor b = Tensor::of({1.0, 2.0, -1.0, 0.5, 0.25, -2.0}, {3, 2}).set_requires_grad();
  Tensor c = ops::matmul(ops::cast(a, DType::BF16), ops::cast(b, DType::BF16));
  EXPECT_EQ(c.dtype(), DType::F32);
  Tensor ref = ops::matmul(a, b);  // these values are exact in bf16
  EXPECT_EQ(c.values(), ref.values());
  backward(ops::sum(c));
  // d sum(AB)/dA = 1 B^T: row sums of B
  EXPECT_EQ(a.grad().values(), (std::vector<double>{3.0, -0.5, -1.75, 3.0, -0.5, -1.75}));
}

TEST(Philox, MatchesRandom123KnownAnswers) {
  Philox4 z = philox4x32(Philox4{{0, 0, 0, 0}}, 0, 0);
  EXPECT_EQ(z.v[0], 0x6627e8d5u);
  EXPECT_EQ(z.v[1], 0xe169c58du);
  EXPECT_EQ(z.v[2], 0xbc57ac4cu);
  EXPECT_EQ(z.v[3], 0x9b00dbd8u);
  Philox4 f = philox4x32(Philox4{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu);
  EXPECT_EQ(f.v[0], 0x408f276du);
  EXPECT_EQ(f.v[1], 0x41c83b0eu);
  EXPECT_EQ(f.v[2], 0xa20bc7c6u);
  EXPECT_EQ(f.v[3], 0x6d5451fdu);
}

TEST(Philox, DropoutMaskIsDeterministicAndHasTheRightRate) {
  Tensor x = Tensor::full({200, 100}, 1.0);
  Generator g1(7), g2(7);
  Tensor a = ops::dropout(x, 0.25, g1), b = ops::dropout(x, 0.25, g2);
  EXPECT_EQ(a.values(), b.values());
  Tensor c = ops::dropout(x, 0.25, g1);  // the stream moves on
  EXPECT_NE(a.values(), c.values());
  int zeros = 0;
  for (double v : a.values()) {
    if (v == 0) ++zeros;
    else EXPECT_FLOAT_EQ(v, 1 / 0.75);
  }
  EXPECT_NEAR(zeros / 20000.0, 0.25, 0.015);
}

// Both backends draw a block of four values per Philox call (the CPU in its loop, CUDA a thread per
// block, philox_block_uniforms): element i is still value offset + i of the stream
// (philox_uniform), for offsets and lengths that are not multiples of four.
TEST(Philox, TheMaskIsTheStreamsValueAtEachOffsetOnCpuAndGpu) {
  for (Device d : testing::cpu_and_gpu("the dropout mask at odd offsets")) {
    for (uint64_t offset : {0, 1, 2, 3, 5, 4096}) {
      for (int64_t n : {1, 3, 4, 13, 1000}) {
        Tensor mask = Tensor::empty({n}, DType::F32, d);
        backend(d).dropout_mask(11, offset, 0.3, mask);
        const std::vector<double> got = mask.values();
        for (int64_t i = 0; i < n; ++i) {
          const double want = philox_uniform(11, offset + static_cast<uint64_t>(i)) < 0.3f ? 0.0 : 1.0 / 0.7f;
          ASSERT_FLOAT_EQ(got[static_cast<size_t>(i)], want)
              << d.str() << ": offset " << offset << ", element " << i << " of " << n;
        }
      }
    }
  }
  // The per-block form the CUDA kernel runs, here on the host: every value once, the stream's.
  for (uint64_t first : {0, 1, 3, 6}) {
    for (uint64_t n : {1, 2, 5, 9}) {
      std::vector<int> seen(n, 0);
      for (uint64_t b = first >> 2; b <= (first + n - 1) >> 2; ++b)
        philox_block_uniforms(11, first, n, b, [&](uint64_t i, float u) {
          ASSERT_LT(i, n);
          ++seen[i];
          EXPECT_EQ(u, philox_uniform(11, first + i)) << "first " << first << ", value " << i;
        });
      EXPECT_EQ(seen, std::vector<int>(n, 1)) << "first " << first << ", n " << n;
    }
  }
}

TEST(Philox, CudaAndCpuDrawTheSameMask) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CPU/CUDA Philox comparison skipped";
  Tensor x = Tensor::full({37, 53}, 1.0);
  Generator g1(99), g2(99);
  Tensor cpu = ops::dropout(x, 0.4, g1);
  Tensor gpu = ops::dropout(x.to(Device::cuda(0)), 0.4, g2);
  EXPECT_EQ(cpu.values(), gpu.values());
}

// The keyed permutation behind draw_distinct: a bijection of [0, n) for every n, also the sizes
// far below the Feistel domain (at least 256), where positions walk their cycle.
TEST(Philox, PermutedIndexIsABijectionOfEverySize) {
  for (uint32_t n : {1u, 2u, 3u, 4u, 5u, 17u, 64u, 65u, 1000u, 4097u}) {
    for (uint64_t key : {0ull, 7ull, 0x9e3779b97f4a7c15ull}) {
      std::vector<int> seen(n, 0);
      for (uint32_t i = 0; i < n; ++i) {
        const uint32_t p = permuted_index(i, n, key);
        ASSERT_LT(p, n);
        ++seen[p];
      }
      EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<long>(n)) << "n " << n << " key " << key;
    }
  }
  // Another key, another order.
  int same = 0;
  for (uint32_t i = 0; i < 1000; ++i) same += permuted_index(i, 1000, 1) == permuted_index(i, 1000, 2);
  EXPECT_LT(same, 20);
}

// Uniform without replacement: over 30,000 keys, 3 of 10 entries are drawn distinct, each entry in
// 30% of the draws and each pair in 1/15 of them (within 5 standard deviations). A 4-round
// network over 4 bits failed this (entries 0-2 drawn 5-8% too often).
TEST(DrawDistinct, DrawsDistinctEntriesUniformly) {
  const std::vector<int32_t> ids = {11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
  const Tensor list = Tensor::from(ids, {10});
  const int draws = 30000;
  std::vector<int> single(10, 0), pair(100, 0);
  for (int k = 0; k < draws; ++k) {
    const std::vector<double> v = ops::draw_distinct(list, 3, static_cast<uint64_t>(k) * 7919 + 1).values();
    ASSERT_EQ(v.size(), 3u);
    std::vector<int> idx;
    for (double e : v) idx.push_back(static_cast<int>(e) - 11);
    ASSERT_TRUE(idx[0] != idx[1] && idx[0] != idx[2] && idx[1] != idx[2]);
    for (int a : idx) {
      ASSERT_TRUE(a >= 0 && a < 10);
      ++single[a];
    }
    for (int a : idx)
      for (int b : idx)
        if (a < b) ++pair[a * 10 + b];
  }
  const double p1 = 0.3, p2 = 1.0 / 15;
  for (int a = 0; a < 10; ++a) EXPECT_NEAR(single[a], draws * p1, 5 * std::sqrt(draws * p1 * (1 - p1))) << a;
  for (int a = 0; a < 10; ++a)
    for (int b = a + 1; b < 10; ++b)
      EXPECT_NEAR(pair[a * 10 + b], draws * p2, 5 * std::sqrt(draws * p2 * (1 - p2))) << a << "," << b;
  // More draws than entries: every entry once; the same key, the same draw.
  std::vector<double> all = ops::draw_distinct(list, 50, 3).values();
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<double>{11, 12, 13, 14, 15, 16, 17, 18, 19, 20}));
  EXPECT_EQ(ops::draw_distinct(list, 4, 99).values(), ops::draw_distinct(list, 4, 99).values());
  EXPECT_NE(error_of([&] { ops::draw_distinct(Tensor::of({1, 2}, {2}), 1, 0); }).find("i32"), std::string::npos);
}

TEST(DrawDistinct, CudaAndCpuDrawTheSameRows) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CPU/CUDA draw comparison skipped";
  std::vector<int32_t> ids(70001);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(3 * i);
  const Tensor list = Tensor::from(ids, {static_cast<int64_t>(ids.size())});
  EXPECT_EQ(ops::draw_distinct(list, 8192, 12345).values(),
            ops::draw_distinct(list.to(Device::cuda(0)), 8192, 12345).values());
}

TEST(Allocator, ReusesFreedBlocks) {
  CachingAllocator& a = host_allocator();
  { Tensor warm = Tensor::empty({1000, 100}); }
  size_t raw = a.stats().raw_allocs;
  for (int i = 0; i < 10; ++i) Tensor t = Tensor::empty({1000, 100});
  EXPECT_EQ(a.stats().raw_allocs, raw);
}

// While frees are held (work on several device queues), a freed block is not handed out again,
// by any caller, until the last release: a queue may still read it. Then it is.
TEST(Allocator, HeldFreesAreReusedOnlyAfterTheRelease) {
  CachingAllocator a([](size_t bytes, int) { return std::malloc(bytes); }, [](void* p, int) { std::free(p); }, 0);
  void* first = a.allocate(4096);
  a.deallocate(first);
  void* again = a.allocate(4096);
  EXPECT_EQ(again, first) << "a plain free is reused at once";
  a.hold_frees();
  a.hold_frees();  // holds nest
  a.deallocate(again);
  void* during = a.allocate(4096);
  EXPECT_NE(during, first) << "a held block must not be handed out";
  EXPECT_EQ(a.stats().in_use, size_t{4096});
  a.release_held();
  void* inner = a.allocate(4096);
  EXPECT_NE(inner, first) << "still held by the outer hold";
  a.release_held();
  void* after = a.allocate(4096);
  EXPECT_EQ(after, first) << "released: reused";
  for (void* p : {during, inner, after}) a.deallocate(p);
  EXPECT_NE(testing::error_of([&] { a.release_held(); }).find("without hold_frees"), std::string::npos);
}

// While a device capture is open, a freed block is set aside: the captured graph may still name
// it. It is handed out again only after its owner returns it.
TEST(Allocator, BlocksSetAsideAreReusedOnlyWhenReturned) {
  CachingAllocator a([](size_t bytes, int) { return std::malloc(bytes); }, [](void* p, int) { std::free(p); }, 0);
  void* made_before = a.allocate(4096);
  a.set_aside_frees(true);
  a.deallocate(made_before);
  void* during = a.allocate(4096);
  EXPECT_NE(during, made_before) << "a block set aside must not be handed out";
  a.set_aside_frees(false);
  void* after = a.allocate(4096);
  EXPECT_NE(after, made_before) << "still set aside after the capture";
  const std::vector<CachingAllocator::Block> aside = a.take_set_aside();
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_EQ(aside[0].second, made_before);
  EXPECT_TRUE(a.take_set_aside().empty());
  a.return_blocks(aside);
  void* returned = a.allocate(4096);
  EXPECT_EQ(returned, made_before) << "returned: reused";
  EXPECT_EQ(a.stats().reserved, size_t{3} * 4096);
  for (void* p : {during, after, returned}) a.deallocate(p);
}

// Shapes that keep changing (embedding sentences of every length) must not grow the host cache
// without end: a block of each size would be kept. 200 blocks of growing size, each freed before
// the next: what stays reserved is bounded by the cache's limit (the peak in use, or 64 MiB).
TEST(Allocator, HostCacheStaysBoundedWhenShapesKeepChanging) {
  const AllocatorStats before = host_allocator().stats();
  size_t largest = 0;
  for (int64_t mib = 1; mib <= 200; ++mib) {
    Tensor t = Tensor::empty({mib * 262144}, DType::F32);  // mib MiB, never touched
    largest = t.nbytes();
  }
  const AllocatorStats after = host_allocator().stats();
  const size_t limit = std::max(size_t{64} << 20, after.peak_in_use);
  EXPECT_LE(after.reserved, after.in_use + limit + largest) << "reserved before " << before.reserved;
  EXPECT_LT(after.reserved - before.reserved, size_t{2000} << 20);  // unbounded: the sum, about 20 GB
}

TEST(Errors, ShapeMismatchNamesOpAndShapes) {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4, 5});
  std::string m = error_of([&] { ops::matmul(a, b); });
  EXPECT_NE(m.find("matmul"), std::string::npos) << m;
  EXPECT_NE(m.find("[2,3]"), std::string::npos) << m;
  EXPECT_NE(m.find("[4,5]"), std::string::npos) << m;
  m = error_of([&] { ops::add(Tensor::zeros({2, 3}), Tensor::zeros({3, 2})); });
  EXPECT_NE(m.find("add"), std::string::npos) << m;
  EXPECT_NE(m.find("[3,2]"), std::string::npos) << m;
}

TEST(Errors, DtypeMismatchNamesOp) {
  std::string m = error_of([&] { ops::mul(Tensor::zeros({2}), Tensor::zeros({2}, DType::F64)); });
  EXPECT_NE(m.find("mul"), std::string::npos) << m;
  EXPECT_NE(m.find("f64"), std::string::npos) << m;
}

TEST(Errors, BadIndicesAndLabelsAreReported) {
  Tensor table = Tensor::zeros({3, 2});
  std::string m = error_of([&] { ops::gather_rows(table, Tensor::from(std::vector<int32_t>{0, 3}, {2})); });
  EXPECT_NE(m.find("index 3"), std::string::npos) << m;
  m = error_of([&] { ops::cross_entropy(Tensor::zeros({2, 4}), Tensor::from(std::vector<int32_t>{1, 4}, {2})); });
  EXPECT_NE(m.find("label 4"), std::string::npos) << m;
}

TEST(Device, ParsesNamesAndFallsBackWithoutGpu) {
  EXPECT_EQ(parse_device("cpu"), Device::cpu());
  EXPECT_EQ(parse_device("cuda:1"), Device::cuda(1));
  EXPECT_THROW(parse_device("tpu"), Error);
  EXPECT_THROW(parse_device("cuda:x"), Error);
  if (cuda_device_count() == 0) {
    EXPECT_EQ(resolve_device("cuda"), Device::cpu());
  }
  EXPECT_EQ(resolve_device("cpu"), Device::cpu());
}

}  // namespace
}  // namespace sa
