// Philox4x32-10 counter-based RNG (Salmon et al. 2011). The same (seed, counter) gives the same
// four words on the CPU and in a CUDA kernel, so dropout masks and samples match across backends.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define SA_HD __host__ __device__ __forceinline__
#else
#define SA_HD inline
#endif

namespace sa {

struct Philox4 {
  uint32_t v[4];
};

SA_HD void philox_mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

// Philox4x32 with 10 rounds on a full 128-bit counter and 64-bit key (Random123's definition).
SA_HD Philox4 philox4x32(Philox4 ctr, uint32_t k0, uint32_t k1) {
  uint32_t c0 = ctr.v[0], c1 = ctr.v[1], c2 = ctr.v[2], c3 = ctr.v[3];
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0, lo0, hi1, lo1;
    philox_mulhilo(0xD2511F53u, c0, hi0, lo0);
    philox_mulhilo(0xCD9E8D57u, c2, hi1, lo1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// Four 32-bit words for block `ctr` of the stream keyed by `seed`.
SA_HD Philox4 philox(uint64_t seed, uint64_t ctr) {
  Philox4 c{{static_cast<uint32_t>(ctr), static_cast<uint32_t>(ctr >> 32), 0u, 0u}};
  return philox4x32(c, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// A Feistel round's function: 32 well-mixed bits of (key, round, r) (SplitMix64's finalizer).
SA_HD uint32_t feistel_round(uint64_t key, uint32_t round, uint32_t r) {
  uint64_t z = key ^ (((uint64_t{round} << 32) | r) * 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<uint32_t>(z ^ (z >> 31));
}

// Position i of a keyed pseudo-random permutation of [0, n), n <= 2^31: a balanced Feistel network
// of 12 rounds over an even number of bits that covers n (at least 8), walking the cycle of i
// until it lands back inside [0, n) (it must: i itself is). The first k positions are k distinct
// draws from [0, n), each computed on its own (a thread each on a GPU), the same on every
// backend. Fewer rounds or 2-bit halves drew small lists measurably unevenly (a chi-square test
// over 60,000 keys); at least 8 bits keeps the walk under 256 / n steps on average for small n.
SA_HD uint32_t permuted_index(uint32_t i, uint32_t n, uint64_t key) {
  int half = 4;
  while ((uint64_t{1} << (2 * half)) < n) ++half;
  const uint32_t mask = static_cast<uint32_t>((uint64_t{1} << half) - 1);
  uint32_t x = i;
  do {
    uint32_t l = x >> half, r = x & mask;
    for (uint32_t round = 0; round < 12; ++round) {
      const uint32_t next = l ^ (feistel_round(key, round, r) & mask);
      l = r, r = next;
    }
    x = (l << half) | r;
  } while (x >= n);
  return x;
}

// Uniform in [0, 1) from a word's top 24 bits: exactly representable in f32, so both backends agree.
SA_HD float philox_word_uniform(uint32_t word) { return static_cast<float>(word >> 8) * (1.0f / 16777216.0f); }

// Value `index` of the stream: word index % 4 of block index / 4, as a uniform in [0, 1).
SA_HD float philox_uniform(uint64_t seed, uint64_t index) {
  return philox_word_uniform(philox(seed, index >> 2).v[index & 3]);
}

// The values of stream block `block` (indices 4 * block .. 4 * block + 3) that fall in
// [first, first + n): f(i, value first + i) for each. A GPU thread per block draws each Philox
// block once, where a thread per value drew it four times.
template <typename F>
SA_HD void philox_block_uniforms(uint64_t seed, uint64_t first, uint64_t n, uint64_t block, F&& f) {
  const Philox4 r = philox(seed, block);
  for (int w = 0; w < 4; ++w) {
    const uint64_t index = block * 4 + static_cast<uint64_t>(w);
    if (index >= first && index - first < n) f(index - first, philox_word_uniform(r.v[w]));
  }
}

// Values first .. first + n - 1 of the stream: f(i, value first + i) for each i, one Philox call per
// block of four (philox_uniform per value draws every block four times). Host loops.
template <typename F>
inline void philox_uniforms(uint64_t seed, uint64_t first, uint64_t n, F&& f) {
  uint64_t i = 0;
  for (; i < n && ((first + i) & 3) != 0; ++i) f(i, philox_uniform(seed, first + i));  // a partial first block
  for (; i + 4 <= n; i += 4) {  // whole blocks, no bounds to test
    const Philox4 r = philox(seed, (first + i) >> 2);
    f(i, philox_word_uniform(r.v[0]));
    f(i + 1, philox_word_uniform(r.v[1]));
    f(i + 2, philox_word_uniform(r.v[2]));
    f(i + 3, philox_word_uniform(r.v[3]));
  }
  for (; i < n; ++i) f(i, philox_uniform(seed, first + i));  // a partial last block
}

}  // namespace sa
