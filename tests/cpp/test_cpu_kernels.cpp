// The CPU kernels compute what they claim and the data checks catch what is wrong.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "core/allocators.hpp"
#include "core/numa_policy.hpp"
#include "cpu/cpu_bw.hpp"
#include "cpu/thread_team.hpp"

using namespace mempath;

namespace {
struct Aligned {
  void* p;
  explicit Aligned(size_t bytes) { EXPECT_EQ(posix_memalign(&p, 4096, bytes), 0); }
  ~Aligned() { free(p); }
};
std::vector<int> two_cpus() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 1 ? std::vector<int>{0, 1} : std::vector<int>{0};
}
}  // namespace

TEST(CpuKernels, EveryIsaReadsWritesAndCopies) {
  // Sizes that split evenly into the read streams, and ones that leave a tail.
  for (size_t bytes : {size_t{1} << 20, (size_t{1} << 20) + 320, size_t{64}}) {
    Aligned a(bytes), b(bytes);
    for (const auto& isa : cpu::available_isas()) {
      std::memset(a.p, 0x01, bytes);
      EXPECT_EQ(isa.read(a.p, bytes), (bytes / 8) * cpu::word_of(1)) << isa.name << " " << bytes;
      isa.write(b.p, bytes, 0x1234);
      for (size_t i = 0; i < bytes / 8; ++i) ASSERT_EQ(static_cast<uint64_t*>(b.p)[i], 0x1234u) << isa.name;
      std::memset(b.p, 0, bytes);
      isa.copy(b.p, a.p, bytes);
      EXPECT_EQ(std::memcmp(a.p, b.p, bytes), 0) << isa.name << " " << bytes;
    }
  }
  EXPECT_EQ(cpu::available_isas().back().name, "scalar");
}

TEST(ThreadTeam, TimesTheSlowestThreadFromTheCommonStart) {
  cpu::ThreadTeam team(two_cpus());
  const double t = team.run([](int i, int) {
    if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(30));
  });
  EXPECT_GE(t, 0.029);
  EXPECT_LT(t, 1.0);
  EXPECT_THROW(team.run([](int, int) { throw std::runtime_error("x"); }), std::runtime_error);
}

TEST(CpuBw, ChecksPassOnCorrectData) {
  const size_t bytes = 8 << 20;
  Aligned src(bytes), dst(bytes);
  std::memset(src.p, 0x01, bytes);
  for (Op op : {Op::Read, Op::Write, Op::Copy}) {
    auto run = cpu::run_bw(cpu::best_isa(), two_cpus(), op, src.p, dst.p, bytes, 2, 1, 3, 0x01);
    EXPECT_TRUE(run.verified) << op_name(op) << run.detail;
    ASSERT_EQ(run.seconds.size(), 3u);
    for (double s : run.seconds) EXPECT_GT(s, 0);
  }
}

TEST(CpuBw, ReadCheckCatchesWrongContent) {
  // The buffer does not hold what the check expects: the read sum must say so, which
  // also proves the loads were not optimised away.
  const size_t bytes = 4 << 20;
  Aligned src(bytes);
  std::memset(src.p, 0x01, bytes);
  static_cast<char*>(src.p)[bytes / 2] = 0x03;
  auto run = cpu::run_bw(cpu::best_isa(), two_cpus(), Op::Read, src.p, nullptr, bytes, 1, 0, 2, 0x01);
  EXPECT_FALSE(run.verified);
}

TEST(CpuBw, CopyCheckCatchesWrongContent) {
  const size_t bytes = 4 << 20;
  Aligned src(bytes), dst(bytes);
  std::memset(src.p, 0x05, bytes);  // not the fill byte the check is told about
  auto run = cpu::run_bw(cpu::best_isa(), two_cpus(), Op::Copy, src.p, dst.p, bytes, 1, 0, 1, 0x01);
  EXPECT_FALSE(run.verified);
  EXPECT_NE(run.detail.find("wrong value"), std::string::npos);
}

TEST(Placement, FormatsSingleMixedAndUnknown) {
  EXPECT_EQ(format_placement({0, 0, 0}), "numa0");
  EXPECT_EQ(format_placement({0, 1, 1, 1}), "numa0:0.25,numa1:0.75");
  EXPECT_EQ(format_placement({-14, -14}), "unknown");
  EXPECT_EQ(format_placement({4, -2}), "numa4:0.5,unknown:0.5");
}

TEST(NumaPolicy, SlicesCoverEverythingOnce) {
  size_t covered = 0, last_end = 0;
  for (int i = 0; i < 3; ++i) {
    size_t b, e;
    slice(10 * 4096 + 4096, i, 3, 4096, &b, &e);
    EXPECT_EQ(b, last_end);
    EXPECT_EQ(b % 4096, 0u);
    covered += e - b;
    last_end = e;
  }
  EXPECT_EQ(covered, 11u * 4096);
}

// Alps runs 64 KiB pages (#33): each thread's chunk is whole pages of the size the node
// runs, so that first touch places every page from one thread and no two threads share one.
TEST(NumaPolicy, PageSlicesAreWholePagesOfTheInjectedSizeAndCoverTheBufferOnce) {
  constexpr size_t kPage = 64 << 10;
  // Page multiples, a buffer with a partial last page, fewer pages than threads, one page.
  for (size_t bytes : {size_t{64} * kPage, size_t{10} * kPage + 4096, size_t{3} * kPage, kPage, size_t{1} << 30})
    for (int count : {1, 2, 3, 7, 72}) {
      size_t last_end = 0;
      for (int i = 0; i < count; ++i) {
        size_t b, e;
        page_slice(bytes, i, count, kPage, &b, &e);
        EXPECT_EQ(b, last_end) << bytes << " " << i << "/" << count;  // contiguous, no overlap
        EXPECT_LE(b, e);
        // Every boundary is a page boundary, or the buffer's end (a partial last page; the
        // empty chunks of threads left without a page).
        if (b != bytes) EXPECT_EQ(b % kPage, 0u) << bytes << " " << i << "/" << count;
        if (e != bytes) EXPECT_EQ(e % kPage, 0u) << bytes << " " << i << "/" << count;
        last_end = e;
      }
      EXPECT_EQ(last_end, bytes) << bytes << " " << count;  // the union is the buffer
    }
  // The node's own page size is what the kernels use; 4 KiB is still split on 4 KiB.
  EXPECT_EQ(page_size(), static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  size_t b, e;
  page_slice(8 * 4096, 1, 2, 4096, &b, &e);
  EXPECT_EQ(b, 4u * 4096);
  EXPECT_EQ(e, 8u * 4096);
}
