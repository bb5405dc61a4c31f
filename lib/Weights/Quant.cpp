//===- Quant.cpp - ggml block quantization and dequantization -------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Each routine follows the matching ggml-quants.c reference routine statement
// for statement (same operation order, so the same f32 rounding), reading the
// packed little-endian blocks byte by byte instead of through structs. The
// build compiles this file with -ffp-contract=off so that no multiply-add is
// fused: in the dequantizers every product of a code and a half-precision
// scale feeding an addition is exact, but the quantizers' `x * id + 0.5f`
// would round differently from ggml and gguf-py.
//
//===----------------------------------------------------------------------===//

#include "RLX/Weights/Quant.h"

#include "llvm/Support/Endian.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace llvm;

namespace rlx {

static float readF16(const uint8_t *p) {
  return f16ToF32(support::endian::read<uint16_t, llvm::endianness::little>(p));
}

static uint32_t readU32(const uint8_t *p) {
  return support::endian::read<uint32_t, llvm::endianness::little>(p);
}

static void writeF16(std::vector<uint8_t> &dst, float value) {
  uint16_t h = f32ToF16(value);
  dst.push_back(static_cast<uint8_t>(h & 0xff));
  dst.push_back(static_cast<uint8_t>(h >> 8));
}

//===----------------------------------------------------------------------===//
// Dequantization
//===----------------------------------------------------------------------===//

void dequantizeQ8_0(const uint8_t *src, MutableArrayRef<float> dst) {
  constexpr size_t qk = 32, blockBytes = 34;
  for (size_t i = 0, nb = dst.size() / qk; i != nb; ++i) {
    const uint8_t *block = src + i * blockBytes;
    const float d = readF16(block);
    const int8_t *qs = reinterpret_cast<const int8_t *>(block + 2);
    for (size_t j = 0; j != qk; ++j)
      dst[i * qk + j] = qs[j] * d;
  }
}

void dequantizeQ4_0(const uint8_t *src, MutableArrayRef<float> dst) {
  constexpr size_t qk = 32, blockBytes = 18;
  for (size_t i = 0, nb = dst.size() / qk; i != nb; ++i) {
    const uint8_t *block = src + i * blockBytes;
    const float d = readF16(block);
    const uint8_t *qs = block + 2;
    for (size_t j = 0; j != qk / 2; ++j) {
      const int x0 = (qs[j] & 0x0F) - 8;
      const int x1 = (qs[j] >> 4) - 8;
      dst[i * qk + j] = x0 * d;
      dst[i * qk + j + qk / 2] = x1 * d;
    }
  }
}

void dequantizeQ4_1(const uint8_t *src, MutableArrayRef<float> dst) {
  constexpr size_t qk = 32, blockBytes = 20;
  for (size_t i = 0, nb = dst.size() / qk; i != nb; ++i) {
    const uint8_t *block = src + i * blockBytes;
    const float d = readF16(block);
    const float m = readF16(block + 2);
    const uint8_t *qs = block + 4;
    for (size_t j = 0; j != qk / 2; ++j) {
      const int x0 = qs[j] & 0x0F;
      const int x1 = qs[j] >> 4;
      dst[i * qk + j] = x0 * d + m;
      dst[i * qk + j + qk / 2] = x1 * d + m;
    }
  }
}

void dequantizeQ5_0(const uint8_t *src, MutableArrayRef<float> dst) {
  constexpr size_t qk = 32, blockBytes = 22;
  for (size_t i = 0, nb = dst.size() / qk; i != nb; ++i) {
    const uint8_t *block = src + i * blockBytes;
    const float d = readF16(block);
    const uint32_t qh = readU32(block + 2);
    const uint8_t *qs = block + 6;
    for (size_t j = 0; j != qk / 2; ++j) {
      const uint8_t xh0 = ((qh >> (j + 0)) << 4) & 0x10;
      const uint8_t xh1 = ((qh >> (j + 12))) & 0x10;
      const int x0 = ((qs[j] & 0x0F) | xh0) - 16;
      const int x1 = ((qs[j] >> 4) | xh1) - 16;
      dst[i * qk + j] = x0 * d;
      dst[i * qk + j + qk / 2] = x1 * d;
    }
  }
}

void dequantizeQ5_1(const uint8_t *src, MutableArrayRef<float> dst) {
  constexpr size_t qk = 32, blockBytes = 24;
  for (size_t i = 0, nb = dst.size() / qk; i != nb; ++i) {
    const uint8_t *block = src + i * blockBytes;
    const float d = readF16(block);
    const float m = readF16(block + 2);
    const uint32_t qh = readU32(block + 4);
    const uint8_t *qs = block + 8;
    for (size_t j = 0; j != qk / 2; ++j) {
      const uint8_t xh0 = ((qh >> (j + 0)) << 4) & 0x10;
      const uint8_t xh1 = ((qh >> (j + 12))) & 0x10;
      const int x0 = (qs[j] & 0x0F) | xh0;
      const int x1 = (qs[j] >> 4) | xh1;
      dst[i * qk + j] = x0 * d + m;
      dst[i * qk + j + qk / 2] = x1 * d + m;
    }
  }
}

void dequantizeQ2_K(const uint8_t *src, MutableArrayRef<float> dst) {
  constexpr size_t qkK = 256, blockBytes = 84;
  float *y = dst.data();
  for (size_t i = 0, nb = dst.size() / qkK; i != nb; ++i) {
    const uint8_t *block = src + i * blockBytes;
    const uint8_t *scales = block;
    const uint8_t *q = block + 16;
    const float d = readF16(block + 80);
    const float min = readF16(block + 82);
    int is = 0;
    for (size_t n = 0; n < qkK; n += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        uint8_t sc = scales[is++];
        float dl = d * (sc & 0xF), ml = min * (sc >> 4);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * static_cast<int8_t>((q[l] >> shift) & 3) - ml;
        sc = scales[is++];
        dl = d * (sc & 0xF);
        ml = min * (sc >> 4);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * static_cast<int8_t>((q[l + 16] >> shift) & 3) - ml;
        shift += 2;
      }
      q += 32;
    }
  }
}

/// The sixteen 6-bit scales of a Q3_K block, unpacked from its 12 bytes and
/// re-centred (ggml's kmask1/kmask2 shuffle, written per scale): scale k has
/// its low four bits in byte k % 8 (the low nibble for k < 8, the high one
/// after) and its high two bits in byte 8 + k % 4, at bit 2 * (k / 4).
static void unpackQ3_KScales(const uint8_t *packed, int8_t scales[16]) {
  for (int k = 0; k < 16; ++k) {
    const int low = (k < 8 ? packed[k] : packed[k - 8] >> 4) & 0xF;
    const int high = (packed[8 + k % 4] >> (2 * (k / 4))) & 3;
    scales[k] = static_cast<int8_t>(low | (high << 4));
  }
}

void dequantizeQ3_K(const uint8_t *src, MutableArrayRef<float> dst) {
  constexpr size_t qkK = 256, blockBytes = 110;
  float *y = dst.data();
  for (size_t i = 0, nb = dst.size() / qkK; i != nb; ++i) {
    const uint8_t *block = src + i * blockBytes;
    const uint8_t *hm = block;
    const uint8_t *q = block + 32;
    int8_t scales[16];
    unpackQ3_KScales(block + 96, scales);
    const float dAll = readF16(block + 108);
    int is = 0;
    uint8_t m = 1;
    for (size_t n = 0; n < qkK; n += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        float dl = dAll * (scales[is++] - 32);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * (static_cast<int8_t>((q[l + 0] >> shift) & 3) -
                       ((hm[l + 0] & m) ? 0 : 4));
        dl = dAll * (scales[is++] - 32);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * (static_cast<int8_t>((q[l + 16] >> shift) & 3) -
                       ((hm[l + 16] & m) ? 0 : 4));
        shift += 2;
        m <<= 1;
      }
      q += 32;
    }
  }
}

/// get_scale_min_k4: the 6-bit scale and min of sub-block j (0..7) from the
/// 12 packed bytes of a Q4_K block.
static void getScaleMinK4(int j, const uint8_t *q, uint8_t &d, uint8_t &m) {
  if (j < 4) {
    d = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
  }
}

void dequantizeQ4_K(const uint8_t *src, MutableArrayRef<float> dst) {
  constexpr size_t qkK = 256, blockBytes = 144;
  float *y = dst.data();
  for (size_t i = 0, nb = dst.size() / qkK; i != nb; ++i) {
    const uint8_t *block = src + i * blockBytes;
    const float d = readF16(block);
    const float min = readF16(block + 2);
    const uint8_t *scales = block + 4;
    const uint8_t *q = block + 16;
    int is = 0;
    uint8_t sc, m;
    for (size_t j = 0; j < qkK; j += 64) {
      getScaleMinK4(is + 0, scales, sc, m);
      const float d1 = d * sc;
      const float m1 = min * m;
      getScaleMinK4(is + 1, scales, sc, m);
      const float d2 = d * sc;
      const float m2 = min * m;
      for (int l = 0; l < 32; ++l)
        *y++ = d1 * (q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l)
        *y++ = d2 * (q[l] >> 4) - m2;
      q += 32;
      is += 2;
    }
  }
}

void dequantizeQ5_K(const uint8_t *src, MutableArrayRef<float> dst) {
  constexpr size_t qkK = 256, blockBytes = 176;
  float *y = dst.data();
  for (size_t i = 0, nb = dst.size() / qkK; i != nb; ++i) {
    const uint8_t *block = src + i * blockBytes;
    const float d = readF16(block);
    const float min = readF16(block + 2);
    const uint8_t *scales = block + 4;
    const uint8_t *qh = block + 16;
    const uint8_t *ql = block + 48;
    int is = 0;
    uint8_t sc, m;
    uint8_t u1 = 1, u2 = 2;
    for (size_t j = 0; j < qkK; j += 64) {
      getScaleMinK4(is + 0, scales, sc, m);
      const float d1 = d * sc;
      const float m1 = min * m;
      getScaleMinK4(is + 1, scales, sc, m);
      const float d2 = d * sc;
      const float m2 = min * m;
      for (int l = 0; l < 32; ++l)
        *y++ = d1 * ((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l)
        *y++ = d2 * ((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
      ql += 32;
      is += 2;
      u1 <<= 2;
      u2 <<= 2;
    }
  }
}

void dequantizeQ6_K(const uint8_t *src, MutableArrayRef<float> dst) {
  constexpr size_t qkK = 256, blockBytes = 210;
  float *y = dst.data();
  for (size_t i = 0, nb = dst.size() / qkK; i != nb; ++i) {
    const uint8_t *block = src + i * blockBytes;
    const float d = readF16(block + 208);
    const uint8_t *ql = block;
    const uint8_t *qh = block + 128;
    const int8_t *sc = reinterpret_cast<const int8_t *>(block + 192);
    for (size_t n = 0; n < qkK; n += 128) {
      for (int l = 0; l < 32; ++l) {
        int is = l / 16;
        const int8_t q1 =
            static_cast<int8_t>((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) -
            32;
        const int8_t q2 = static_cast<int8_t>((ql[l + 32] & 0xF) |
                                              (((qh[l] >> 2) & 3) << 4)) -
                          32;
        const int8_t q3 =
            static_cast<int8_t>((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) -
            32;
        const int8_t q4 =
            static_cast<int8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) -
            32;
        y[l + 0] = d * sc[is + 0] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

void quantizeQ8_0(ArrayRef<float> src, std::vector<uint8_t> &dst) {
  constexpr size_t qk = 32;
  assert(src.size() % qk == 0 && "not a whole number of q8_0 blocks");
  for (size_t i = 0, nb = src.size() / qk; i != nb; ++i) {
    const float *x = src.data() + i * qk;
    float amax = 0.0f;
    for (size_t j = 0; j != qk; ++j)
      amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / ((1 << 7) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    writeF16(dst, d);
    for (size_t j = 0; j != qk; ++j)
      dst.push_back(
          static_cast<uint8_t>(static_cast<int8_t>(std::roundf(x[j] * id))));
  }
}

void quantizeQ4_0(ArrayRef<float> src, std::vector<uint8_t> &dst) {
  constexpr size_t qk = 32;
  assert(src.size() % qk == 0 && "not a whole number of q4_0 blocks");
  for (size_t i = 0, nb = src.size() / qk; i != nb; ++i) {
    const float *x = src.data() + i * qk;
    float amax = 0.0f, max = 0.0f;
    for (size_t j = 0; j != qk; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8;
    const float id = d ? 1.0f / d : 0.0f;
    writeF16(dst, d);
    for (size_t j = 0; j != qk / 2; ++j) {
      const float x0 = x[j] * id;
      const float x1 = x[qk / 2 + j] * id;
      const uint8_t xi0 = std::min<int>(15, static_cast<int8_t>(x0 + 8.5f));
      const uint8_t xi1 = std::min<int>(15, static_cast<int8_t>(x1 + 8.5f));
      dst.push_back(static_cast<uint8_t>(xi0 | (xi1 << 4)));
    }
  }
}

void quantizeQ4_1(ArrayRef<float> src, std::vector<uint8_t> &dst) {
  constexpr size_t qk = 32;
  assert(src.size() % qk == 0 && "not a whole number of q4_1 blocks");
  for (size_t i = 0, nb = src.size() / qk; i != nb; ++i) {
    const float *x = src.data() + i * qk;
    float min = std::numeric_limits<float>::max();
    float max = -std::numeric_limits<float>::max();
    for (size_t j = 0; j != qk; ++j) {
      if (x[j] < min)
        min = x[j];
      if (x[j] > max)
        max = x[j];
    }
    const float d = (max - min) / ((1 << 4) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    writeF16(dst, d);
    writeF16(dst, min);
    for (size_t j = 0; j != qk / 2; ++j) {
      const float x0 = (x[j] - min) * id;
      const float x1 = (x[qk / 2 + j] - min) * id;
      const uint8_t xi0 = std::min<int>(15, static_cast<int8_t>(x0 + 0.5f));
      const uint8_t xi1 = std::min<int>(15, static_cast<int8_t>(x1 + 0.5f));
      dst.push_back(static_cast<uint8_t>(xi0 | (xi1 << 4)));
    }
  }
}

/// Appends the Q5 tail of a block: qh (bit j is the fifth bit of element j)
/// and then the low nibbles, element j in the low half of byte j % 16 for
/// j < 16 and in the high half for the rest.
static void writeQ5Codes(const uint8_t (&codes)[32],
                         std::vector<uint8_t> &dst) {
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j)
    qh |= uint32_t((codes[j] & 0x10u) >> 4) << j;
  uint8_t bytes[4];
  support::endian::write<uint32_t, llvm::endianness::little>(bytes, qh);
  dst.insert(dst.end(), bytes, bytes + 4);
  for (int j = 0; j < 16; ++j)
    dst.push_back(static_cast<uint8_t>((codes[j] & 0x0F) |
                                       ((codes[j + 16] & 0x0F) << 4)));
}

void quantizeQ5_0(ArrayRef<float> src, std::vector<uint8_t> &dst) {
  constexpr size_t qk = 32;
  assert(src.size() % qk == 0 && "not a whole number of q5_0 blocks");
  for (size_t i = 0, nb = src.size() / qk; i != nb; ++i) {
    const float *x = src.data() + i * qk;
    float amax = 0.0f, max = 0.0f;
    for (size_t j = 0; j != qk; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -16;
    const float id = d ? 1.0f / d : 0.0f;
    writeF16(dst, d);
    uint8_t codes[qk];
    for (size_t j = 0; j != qk; ++j) {
      const float x0 = x[j] * id;
      codes[j] = std::min<int>(31, static_cast<int8_t>(x0 + 16.5f));
    }
    writeQ5Codes(codes, dst);
  }
}

void quantizeQ5_1(ArrayRef<float> src, std::vector<uint8_t> &dst) {
  constexpr size_t qk = 32;
  assert(src.size() % qk == 0 && "not a whole number of q5_1 blocks");
  for (size_t i = 0, nb = src.size() / qk; i != nb; ++i) {
    const float *x = src.data() + i * qk;
    float min = std::numeric_limits<float>::max();
    float max = -std::numeric_limits<float>::max();
    for (size_t j = 0; j != qk; ++j) {
      if (x[j] < min)
        min = x[j];
      if (x[j] > max)
        max = x[j];
    }
    const float d = (max - min) / ((1 << 5) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    writeF16(dst, d);
    writeF16(dst, min);
    uint8_t codes[qk];
    for (size_t j = 0; j != qk; ++j) {
      const float x0 = (x[j] - min) * id;
      codes[j] = static_cast<uint8_t>(x0 + 0.5f);
    }
    writeQ5Codes(codes, dst);
  }
}

Expected<std::vector<uint8_t>> encodeFromF32(DType dtype, ArrayRef<float> src) {
  std::vector<uint8_t> out;
  uint64_t blockElements = dtypeBlockElements(dtype);
  if (src.size() % blockElements != 0)
    return createStringError(Twine(src.size()) +
                             " elements are not a whole number of " +
                             dtypeName(dtype) + " blocks");
  out.reserve(src.size() / blockElements * dtypeBlockBytes(dtype));
  auto put16 = [&](uint16_t h) {
    out.push_back(static_cast<uint8_t>(h & 0xff));
    out.push_back(static_cast<uint8_t>(h >> 8));
  };
  switch (dtype) {
  case DType::F32:
    for (float v : src) {
      uint8_t bytes[4];
      support::endian::write<float, llvm::endianness::little>(bytes, v);
      out.insert(out.end(), bytes, bytes + 4);
    }
    return out;
  case DType::F16:
    for (float v : src)
      put16(f32ToF16(v));
    return out;
  case DType::BF16:
    for (float v : src)
      put16(f32ToBF16(v));
    return out;
  case DType::Q8_0:
    quantizeQ8_0(src, out);
    return out;
  case DType::Q4_0:
    quantizeQ4_0(src, out);
    return out;
  case DType::Q4_1:
    quantizeQ4_1(src, out);
    return out;
  case DType::Q5_0:
    quantizeQ5_0(src, out);
    return out;
  case DType::Q5_1:
    quantizeQ5_1(src, out);
    return out;
  default:
    return createStringError("cannot encode f32 data as " + dtypeName(dtype));
  }
}

} // namespace rlx
