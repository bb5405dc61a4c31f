//===- GPUKernelEmitter.cpp - Building blocks of the GPU kernels ----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "GPUKernelEmitter.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"
#include <cmath>

using namespace mlir;
using namespace mlir::rlx;

//===----------------------------------------------------------------------===//
// Constants and index arithmetic
//===----------------------------------------------------------------------===//

Value GPUKernelEmitter::add(Value a, Value c) {
  return arith::AddIOp::create(b, loc, a, c);
}
Value GPUKernelEmitter::mul(Value a, Value c) {
  return arith::MulIOp::create(b, loc, a, c);
}
Value GPUKernelEmitter::mulConst(Value a, int64_t c) {
  if (c == 1)
    return a;
  return mul(a, index(c));
}
Value GPUKernelEmitter::addConst(Value a, int64_t c) {
  if (c == 0)
    return a;
  return add(a, index(c));
}
Value GPUKernelEmitter::divConst(Value a, int64_t c) {
  if (c == 1)
    return a;
  return arith::DivUIOp::create(b, loc, a, index(c));
}
Value GPUKernelEmitter::remConst(Value a, int64_t c) {
  if (c == 1)
    return index(0);
  return arith::RemUIOp::create(b, loc, a, index(c));
}
Value GPUKernelEmitter::minIndex(Value a, Value c) {
  return arith::MinUIOp::create(b, loc, a, c);
}
Value GPUKernelEmitter::cmpLT(Value a, Value c) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, a, c);
}
Value GPUKernelEmitter::cmpLTConst(Value a, int64_t c) {
  return cmpLT(a, index(c));
}
Value GPUKernelEmitter::andI(Value a, Value c) {
  return arith::AndIOp::create(b, loc, a, c);
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

Value GPUKernelEmitter::linearIndex(const GPUView &view, ValueRange indices) {
  Value lin;
  for (auto [i, idx] : llvm::enumerate(indices)) {
    if (view.shape[i] == 1)
      continue; // The only valid index is 0.
    Value term = mulConst(idx, view.strides[i]);
    lin = lin ? add(lin, term) : term;
  }
  if (!lin)
    return index(view.offset);
  return addConst(lin, view.offset);
}

bool GPUKernelEmitter::isWordDecoded(Type t) {
  return t.isBF16() || isa<mir::QuantType>(t);
}

//===----------------------------------------------------------------------===//
// Weights as stored: bf16 and ggml blocks
//===----------------------------------------------------------------------===//
//
// A weight kept as stored binds as 32-bit words, and each load decodes its
// one element from the bytes with integer ops. The float arithmetic follows
// ggml's dequantize_row_* and gguf-py's dequantize (lib/Weights/Quant.cpp is
// the same code on the CPU) operation for operation: the f16 scales widen
// exactly and every product that may round (q6_K's d * scale * q) is formed
// in their order, so the values are theirs bit for bit. The blocks
// (little-endian; offsets in bytes, see ggml-common.h):
//
//   q8_0   34 B / 32:  f16 d, i8 qs[32]                      d * q
//   q4_0   18 B / 32:  f16 d, u8 qs[16]                      d * (q - 8)
//   q4_1   20 B / 32:  f16 d, f16 m, u8 qs[16]               d * q + m
//   q5_0   22 B / 32:  f16 d, u8 qh[4], u8 qs[16]            d * (q - 16)
//   q5_1   24 B / 32:  f16 d, f16 m, u8 qh[4], u8 qs[16]     d * q + m
//   q2_K   84 B / 256: u8 scales[16], u8 qs[64], f16 d, f16 dmin
//   q3_K  110 B / 256: u8 hmask[32], u8 qs[64], u8 scales[12], f16 d
//   q4_K  144 B / 256: f16 d, f16 dmin, u8 scales[12], u8 qs[128]
//   q5_K  176 B / 256: f16 d, f16 dmin, u8 scales[12], u8 qh[32], u8 qs[128]
//   q6_K  210 B / 256: u8 ql[128], u8 qh[64], i8 scales[16], f16 d

namespace {
/// Decodes single elements of a weight stored as bf16 or ggml blocks from
/// the i32 storage buffer it is bound to. Byte positions are indices; bytes,
/// bit fields and codes are i32 values.
class StoredDecoder {
public:
  StoredDecoder(GPUKernelEmitter &e, Value buffer)
      : e(e), b(e.b), loc(e.loc), buffer(buffer) {}

  /// Element `i` (linear) of a bf16 tensor.
  Value bf16(Value i);
  /// Element `j` (in [0, block size)) of the block of `kind` at byte
  /// `block`, as f32.
  Value blockElement(mir::QuantKind kind, Value block, Value j);

private:
  // One function per block family.
  Value q8_0(Value block, Value j);
  /// q4_0, q4_1, q5_0 and q5_1: nibbles, a fifth bit from qh, a min or an
  /// offset.
  Value q4q5(mir::QuantKind kind, Value block, Value j);
  Value q2K(Value block, Value j);
  Value q3K(Value block, Value j);
  /// q4_K and q5_K: eight sub-blocks of 32 with 6-bit scales and mins.
  Value q4q5K(mir::QuantKind kind, Value block, Value j);
  Value q6K(Value block, Value j);

  /// The 6-bit scale and min of sub-block `sub` (an index in [0, 8)) of a
  /// q4_K/q5_K block, from the 12 bytes at `block + offset`
  /// (get_scale_min_k4).
  std::pair<Value, Value> scaleMinK4(Value block, int64_t offset, Value sub);
  /// Byte `block + offset + at` (`at` may be null), in [0, 255].
  Value byteAt(Value block, int64_t offset, Value at);
  /// The f16 at byte `block + offset` (even), as f32.
  Value halfAt(Value block, int64_t offset);
  /// The 32-bit word holding byte `byte`, shifted right so that the byte
  /// comes first.
  Value wordAtByte(Value byte);
  /// An f16 given as its bits (the low 16 bits of an i32), as f32.
  Value halfBitsToF32(Value bits);
  /// (v >> shift) & mask, `shift` an index.
  Value bits(Value v, Value shift, int64_t mask);

  // i32 arithmetic.
  Value c(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  }
  Value andC(Value v, int64_t m) {
    return arith::AndIOp::create(b, loc, v, c(m));
  }
  Value orI(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value shlC(Value v, int64_t s) {
    return arith::ShLIOp::create(b, loc, v, c(s));
  }
  Value shrC(Value v, int64_t s) {
    return arith::ShRUIOp::create(b, loc, v, c(s));
  }
  Value subC(Value v, int64_t s) {
    return arith::SubIOp::create(b, loc, v, c(s));
  }
  /// A byte read as an int8.
  Value signedByte(Value v) {
    return arith::ShRSIOp::create(b, loc, shlC(v, 24), c(24));
  }
  Value toF32(Value i) {
    return arith::SIToFPOp::create(b, loc, b.getF32Type(), i);
  }
  Value subF(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }

  GPUKernelEmitter &e;
  OpBuilder &b;
  Location loc;
  Value buffer;
};
} // namespace

Value StoredDecoder::wordAtByte(Value byte) {
  Value word =
      memref::LoadOp::create(b, loc, buffer, ValueRange{e.divConst(byte, 4)});
  Value shift = arith::IndexCastOp::create(b, loc, b.getI32Type(),
                                           e.mulConst(e.remConst(byte, 4), 8));
  return arith::ShRUIOp::create(b, loc, word, shift);
}

Value StoredDecoder::byteAt(Value block, int64_t offset, Value at) {
  return andC(wordAtByte(e.addConst(at ? e.add(block, at) : block, offset)),
              0xff);
}

Value StoredDecoder::halfAt(Value block, int64_t offset) {
  return halfBitsToF32(wordAtByte(e.addConst(block, offset)));
}

Value StoredDecoder::bits(Value v, Value shift, int64_t mask) {
  std::optional<int64_t> constant = getConstantIntValue(shift);
  if (!constant || *constant != 0)
    v = arith::ShRUIOp::create(
        b, loc, v, arith::IndexCastOp::create(b, loc, b.getI32Type(), shift));
  return andC(v, mask);
}

Value StoredDecoder::halfBitsToF32(Value bits) {
  Type f32 = b.getF32Type();
  Value h = andC(bits, 0xffff);
  Value sign = shlC(andC(h, 0x8000), 16);
  Value exp = andC(shrC(h, 10), 0x1f);
  Value mant = andC(h, 0x3ff);
  // Normal numbers: rebias the exponent (15 -> 127); infinities and NaNs
  // keep an all-ones exponent.
  Value isMax =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, exp, c(31));
  Value fexp = arith::SelectOp::create(
      b, loc, isMax, c(0xff), arith::AddIOp::create(b, loc, exp, c(112)));
  Value normal = orI(orI(sign, shlC(fexp, 23)), shlC(mant, 13));
  Value normalF = arith::BitcastOp::create(b, loc, f32, normal);
  // Zeros and subnormals: mant * 2^-24, signed.
  Value sub =
      e.mulF(arith::UIToFPOp::create(b, loc, f32, mant),
             arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0x1p-24f)));
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, sign, c(0));
  sub = arith::SelectOp::create(b, loc, negative,
                                arith::NegFOp::create(b, loc, sub), sub);
  Value isSub =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, exp, c(0));
  return arith::SelectOp::create(b, loc, isSub, sub, normalF);
}

std::pair<Value, Value> StoredDecoder::scaleMinK4(Value block, int64_t offset,
                                                  Value sub) {
  // Sub-block s < 4 keeps its scale and min in the low six bits of bytes s
  // and s + 4; s >= 4 keeps their low four bits in the nibbles of byte
  // s + 4 and their high two in the top bits of bytes s - 4 and s. With
  // r = s % 4 that is bytes r, r + 4 and r + 8 either way.
  Value r = e.remConst(sub, 4);
  Value b0 = byteAt(block, offset, r), b4 = byteAt(block, offset + 4, r),
        b8 = byteAt(block, offset + 8, r);
  Value first = e.cmpLTConst(sub, 4);
  Value scale = arith::SelectOp::create(
      b, loc, first, andC(b0, 63), orI(andC(b8, 0xf), andC(shrC(b0, 2), 0x30)));
  Value min = arith::SelectOp::create(
      b, loc, first, andC(b4, 63), orI(shrC(b8, 4), andC(shrC(b4, 2), 0x30)));
  return {scale, min};
}

Value StoredDecoder::bf16(Value i) {
  // Two bytes an element: the bits of the upper half of an f32.
  Value h = andC(wordAtByte(e.mulConst(i, 2)), 0xffff);
  return arith::BitcastOp::create(b, loc, b.getF32Type(), shlC(h, 16));
}

Value StoredDecoder::q8_0(Value block, Value j) {
  Value q = signedByte(byteAt(block, 2, j));
  return e.mulF(halfAt(block, 0), toF32(q));
}

Value StoredDecoder::q4q5(mir::QuantKind kind, Value block, Value j) {
  bool hasMin = kind == mir::QuantKind::Q4_1 || kind == mir::QuantKind::Q5_1;
  bool fifthBit = kind == mir::QuantKind::Q5_0 || kind == mir::QuantKind::Q5_1;
  int64_t qh = hasMin ? 4 : 2, qs = fifthBit ? qh + 4 : qh;
  // Element j < 16 is the low nibble of byte j, element j >= 16 the high
  // nibble of byte j - 16.
  Value q = bits(byteAt(block, qs, e.remConst(j, 16)),
                 e.mulConst(e.divConst(j, 16), 4), 0xf);
  // Its fifth bit is bit j of the 32 bits of qh.
  if (fifthBit)
    q = orI(q,
            shlC(bits(byteAt(block, qh, e.divConst(j, 8)), e.remConst(j, 8), 1),
                 4));
  Value d = halfAt(block, 0);
  if (hasMin)
    return e.addF(e.mulF(d, toF32(q)), halfAt(block, 2));
  return e.mulF(d, toF32(subC(q, fifthBit ? 16 : 8)));
}

Value StoredDecoder::q2K(Value block, Value j) {
  // Sixteen groups of 16 elements, each with a byte of scales: the low
  // nibble multiplies d, the high one dmin.
  Value sc = byteAt(block, 0, e.divConst(j, 16));
  Value dl = e.mulF(halfAt(block, 80), toF32(andC(sc, 0xf)));
  Value ml = e.mulF(halfAt(block, 82), toF32(shrC(sc, 4)));
  // Each half of 128 elements takes 32 bytes of 2-bit codes: element j is
  // in byte (j / 128) * 32 + j % 32, at bit 2 * ((j / 32) % 4).
  Value at = e.add(e.mulConst(e.divConst(j, 128), 32), e.remConst(j, 32));
  Value q = bits(byteAt(block, 16, at),
                 e.mulConst(e.remConst(e.divConst(j, 32), 4), 2), 3);
  return subF(e.mulF(dl, toF32(q)), ml);
}

Value StoredDecoder::q3K(Value block, Value j) {
  // Sixteen 6-bit scales, centred on 32: scale g has its low four bits in
  // byte g % 8 (nibble g / 8) and its high two in byte 8 + g % 4 (at bit
  // 2 * (g / 4)).
  Value g = e.divConst(j, 16);
  Value low = bits(byteAt(block, 96, e.remConst(g, 8)),
                   e.mulConst(e.divConst(g, 8), 4), 0xf);
  Value high = bits(byteAt(block, 104, e.remConst(g, 4)),
                    e.mulConst(e.divConst(g, 4), 2), 3);
  Value scale = subC(orI(low, shlC(high, 4)), 32);
  // The 2-bit code sits as q2_K's; it loses 4 unless its bit of hmask
  // (bit j / 32 of byte j % 32) is set.
  Value at = e.add(e.mulConst(e.divConst(j, 128), 32), e.remConst(j, 32));
  Value q = bits(byteAt(block, 32, at),
                 e.mulConst(e.remConst(e.divConst(j, 32), 4), 2), 3);
  Value h = bits(byteAt(block, 0, e.remConst(j, 32)), e.divConst(j, 32), 1);
  Value code = arith::SubIOp::create(
      b, loc, q, shlC(arith::XOrIOp::create(b, loc, h, c(1)), 2));
  return e.mulF(e.mulF(halfAt(block, 108), toF32(scale)), toF32(code));
}

Value StoredDecoder::q4q5K(mir::QuantKind kind, Value block, Value j) {
  bool q5 = kind == mir::QuantKind::Q5_K;
  Value sub = e.divConst(j, 32);
  auto [sc, m] = scaleMinK4(block, 4, sub);
  // 32 bytes of nibbles per 64 elements: element j is in byte
  // (j / 64) * 32 + j % 32, the low nibble for even sub-blocks.
  Value at = e.add(e.mulConst(e.divConst(j, 64), 32), e.remConst(j, 32));
  Value q = bits(byteAt(block, q5 ? 48 : 16, at),
                 e.mulConst(e.remConst(sub, 2), 4), 0xf);
  // q5_K: the fifth bit is bit `sub` of qh byte j % 32.
  if (q5)
    q = orI(q, shlC(bits(byteAt(block, 16, e.remConst(j, 32)), sub, 1), 4));
  Value d = e.mulF(halfAt(block, 0), toF32(sc));
  Value dm = e.mulF(halfAt(block, 2), toF32(m));
  return subF(e.mulF(d, toF32(q)), dm);
}

Value StoredDecoder::q6K(Value block, Value j) {
  // Each half of 128 elements: 64 bytes of low nibbles (element j in byte
  // (j / 128) * 64 + j % 64, the high nibble for (j / 64) odd) and 32 of
  // high 2-bit pairs (byte (j / 128) * 32 + j % 32, bit 2 * ((j / 32) % 4)).
  Value half = e.divConst(j, 128);
  Value low =
      bits(byteAt(block, 0, e.add(e.mulConst(half, 64), e.remConst(j, 64))),
           e.mulConst(e.remConst(e.divConst(j, 64), 2), 4), 0xf);
  Value high =
      bits(byteAt(block, 128, e.add(e.mulConst(half, 32), e.remConst(j, 32))),
           e.mulConst(e.remConst(e.divConst(j, 32), 4), 2), 3);
  Value q = subC(orI(low, shlC(high, 4)), 32);
  // A signed 8-bit scale per 16 elements.
  Value scale = signedByte(byteAt(block, 192, e.divConst(j, 16)));
  return e.mulF(e.mulF(halfAt(block, 208), toF32(scale)), toF32(q));
}

Value StoredDecoder::blockElement(mir::QuantKind kind, Value block, Value j) {
  switch (kind) {
  case mir::QuantKind::Q8_0:
    return q8_0(block, j);
  case mir::QuantKind::Q4_0:
  case mir::QuantKind::Q4_1:
  case mir::QuantKind::Q5_0:
  case mir::QuantKind::Q5_1:
    return q4q5(kind, block, j);
  case mir::QuantKind::Q2_K:
    return q2K(block, j);
  case mir::QuantKind::Q3_K:
    return q3K(block, j);
  case mir::QuantKind::Q4_K:
  case mir::QuantKind::Q5_K:
    return q4q5K(kind, block, j);
  case mir::QuantKind::Q6_K:
    return q6K(block, j);
  }
  llvm_unreachable("unknown ggml block type");
}

/// An element of a weight kept as bf16 or ggml blocks, decoded from its
/// 32-bit words.
static Value loadStored(GPUKernelEmitter &e, const GPUView &view,
                        ValueRange indices) {
  StoredDecoder decoder(e, view.buffer);
  if (view.elementType.isBF16())
    return decoder.bf16(e.linearIndex(view, indices));
  // Blocks along the rows of an [N, K] weight; `offset` counts bytes here.
  assert(indices.size() == 2 && "ggml blocks are read from [N, K] weights");
  auto q = cast<mir::QuantType>(view.elementType);
  int64_t elements = q.getBlockElements(), bytes = q.getBlockBytes();
  int64_t rowBytes = view.shape.back() / elements * bytes;
  Value row = indices[0], col = indices[1];
  Value block = e.addConst(e.add(e.mulConst(row, rowBytes),
                                 e.mulConst(e.divConst(col, elements), bytes)),
                           view.offset);
  return decoder.blockElement(q.getKind(), block, e.remConst(col, elements));
}

Value GPUKernelEmitter::load(const GPUView &view, ValueRange indices) {
  if (view.isScalar())
    return view.scalar;
  if (isWordDecoded(view.elementType))
    return loadStored(*this, view, indices);
  return memref::LoadOp::create(b, loc, view.buffer,
                                ValueRange{linearIndex(view, indices)});
}

void GPUKernelEmitter::store(Value value, const GPUView &view,
                             ValueRange indices) {
  memref::StoreOp::create(b, loc, value, view.buffer,
                          ValueRange{linearIndex(view, indices)});
}

Value GPUKernelEmitter::loadOr(const GPUView &view, ValueRange indices,
                               Value inBounds, Value fallback) {
  SmallVector<Value> clamped;
  for (auto [i, idx] : llvm::enumerate(indices))
    clamped.push_back(minIndex(idx, index(view.shape[i] - 1)));
  Value v = castValue(load(view, clamped), fallback.getType());
  return arith::SelectOp::create(b, loc, inBounds, v, fallback);
}

static MemRefType localType(ArrayRef<int64_t> shape, Type elt,
                            spirv::StorageClass sc) {
  return MemRefType::get(shape, elt, MemRefLayoutAttrInterface(),
                         spirv::StorageClassAttr::get(elt.getContext(), sc));
}

Value GPUKernelEmitter::sharedAlloc(ArrayRef<int64_t> shape, Type elt) {
  return memref::AllocOp::create(
      b, loc, localType(shape, elt, spirv::StorageClass::Workgroup));
}

Value GPUKernelEmitter::privateAlloc(ArrayRef<int64_t> shape, Type elt) {
  return memref::AllocaOp::create(
      b, loc, localType(shape, elt, spirv::StorageClass::Function));
}

Value GPUKernelEmitter::loadLocal(Value memref, ValueRange indices) {
  return memref::LoadOp::create(b, loc, memref, indices);
}

void GPUKernelEmitter::storeLocal(Value value, Value memref,
                                  ValueRange indices) {
  memref::StoreOp::create(b, loc, value, memref, indices);
}

void GPUKernelEmitter::barrier() { gpu::BarrierOp::create(b, loc); }

//===----------------------------------------------------------------------===//
// Threads and loops
//===----------------------------------------------------------------------===//

static gpu::Dimension dimension(unsigned dim) {
  return dim == 0 ? gpu::Dimension::x
                  : (dim == 1 ? gpu::Dimension::y : gpu::Dimension::z);
}

Value GPUKernelEmitter::threadId(unsigned dim) {
  return gpu::ThreadIdOp::create(b, loc, dimension(dim));
}

Value GPUKernelEmitter::workgroupId(unsigned dim) {
  return gpu::BlockIdOp::create(b, loc, dimension(dim));
}

void GPUKernelEmitter::launch1D(int64_t threads, int64_t units) {
  workgroupSize = {threads, 1, 1};
  numWorkgroups = {std::clamp<int64_t>(units, 1, target.maxWorkgroups), 1, 1};
}

void GPUKernelEmitter::forEachElement(int64_t n,
                                      function_ref<void(Value i)> body) {
  int64_t wg = target.workgroupSize;
  launch1D(wg, (n + wg - 1) / wg);
  Value gid = add(mulConst(workgroupId(0), wg), threadId(0));
  int64_t total = numWorkgroups[0] * wg;
  if (total >= n) {
    if (total == n) {
      body(gid);
      return;
    }
    ifThen(cmpLTConst(gid, n), [&] { body(gid); });
    return;
  }
  forLoop(gid, index(n), total, {}, [&](Value i, ValueRange) {
    body(i);
    return SmallVector<Value>{};
  });
}

void GPUKernelEmitter::forEachWorkgroupItem(
    int64_t n, int64_t threads,
    function_ref<void(Value item, Value tid)> body) {
  launch1D(threads, n);
  Value tid = threadId(0);
  Value group = workgroupId(0);
  if (numWorkgroups[0] == n) {
    body(group, tid);
    return;
  }
  forLoop(group, index(n), numWorkgroups[0], {}, [&](Value item, ValueRange) {
    body(item, tid);
    return SmallVector<Value>{};
  });
}

SmallVector<Value> GPUKernelEmitter::forLoop(
    Value lb, Value ub, int64_t step, ValueRange init,
    function_ref<SmallVector<Value>(Value iv, ValueRange iter)> body) {
  auto emitLoop = [&]() -> SmallVector<Value> {
    auto loop = scf::ForOp::create(
        b, loc, lb, ub, index(step), init,
        [&](OpBuilder &nested, Location, Value iv, ValueRange iter) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          SmallVector<Value> next = body(iv, iter);
          scf::YieldOp::create(b, loc, next);
        });
    return SmallVector<Value>(loop.getResults());
  };
  std::optional<int64_t> l = getConstantIntValue(lb),
                         u = getConstantIntValue(ub);
  if (init.empty() || (l && u && *u > *l))
    return emitLoop();
  // SCFToSPIRV keeps loop results in variables written by the body only, so
  // a loop that may run zero times must not be asked for its results: the
  // guard gives `init` instead.
  Value runs = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, lb, ub);
  SmallVector<Value> initValues(init.begin(), init.end());
  return ifThenElse(runs, TypeRange(init), emitLoop,
                    [&]() -> SmallVector<Value> { return initValues; });
}

void GPUKernelEmitter::forLoop(int64_t lb, int64_t ub, int64_t step,
                               function_ref<void(Value iv)> body) {
  forLoop(index(lb), index(ub), step, {}, [&](Value iv, ValueRange) {
    body(iv);
    return SmallVector<Value>{};
  });
}

Value GPUKernelEmitter::workgroupReduce(Value value, bool isMax, Value scratch,
                                        Value tid, int64_t threads) {
  return workgroupReduce(value,
                         isMax ? vector::CombiningKind::MAXIMUMF
                               : vector::CombiningKind::ADD,
                         scratch, tid, threads);
}

Value GPUKernelEmitter::workgroupReduce(Value value, vector::CombiningKind kind,
                                        Value scratch, Value tid,
                                        int64_t threads) {
  assert(llvm::isPowerOf2_64(threads) && "tree reduction needs 2^k threads");
  storeLocal(value, scratch, tid);
  barrier();
  for (int64_t s = threads / 2; s >= 1; s /= 2) {
    ifThen(cmpLTConst(tid, s), [&] {
      Value other = loadLocal(scratch, addConst(tid, s));
      Value mine = loadLocal(scratch, tid);
      storeLocal(combine(kind, mine, other), scratch, tid);
    });
    barrier();
  }
  Value result = loadLocal(scratch, index(0));
  // Nobody may overwrite the scratch before everyone has read the result.
  barrier();
  return result;
}

//===----------------------------------------------------------------------===//
// Scalar math
//===----------------------------------------------------------------------===//

Value GPUKernelEmitter::addF(Value a, Value c) {
  return arith::AddFOp::create(b, loc, a, c);
}
Value GPUKernelEmitter::mulF(Value a, Value c) {
  return arith::MulFOp::create(b, loc, a, c);
}

Value GPUKernelEmitter::combine(bool isMax, Value a, Value c) {
  return combine(isMax ? vector::CombiningKind::MAXIMUMF
                       : vector::CombiningKind::ADD,
                 a, c);
}

//===----------------------------------------------------------------------===//
// The kernel layer's primitives
//===----------------------------------------------------------------------===//

void GPUKernelEmitter::forEachElement(
    const KernelView &out, int64_t width,
    function_ref<void(const ElementPos &)> body) {
  assert(width == 1 && "SPIR-V kernels handle one element per thread");
  forEachElement(out.numElements(), [&](Value i) {
    ElementPos pos;
    pos.linear = i;
    // Coordinates nobody reads fold away.
    pos.coords = delinearize(i, out.shape);
    body(pos);
  });
}

namespace {
/// One row of a row-wise kernel, processed by the threads of a workgroup.
class GPURow : public RowScope {
public:
  GPURow(GPUKernelEmitter &e, Value tid, int64_t threads, Value scratch)
      : e(e), tid(tid), threads(threads), scratch(scratch) {}
  Value reduce(Value init, vector::CombiningKind kind,
               function_ref<Value(Value j, int64_t width)> body) override {
    // This thread's elements, then a tree over the workgroup.
    Value partial =
        e.forLoop(tid, e.index(n), threads, {init},
                  [&](Value j, ValueRange it) -> SmallVector<Value> {
                    return {e.combine(kind, it[0], body(j, 1))};
                  })[0];
    return e.workgroupReduce(partial, kind, scratch, tid, threads);
  }
  void forEach(function_ref<void(Value j, int64_t width)> body) override {
    e.forLoop(tid, e.index(n), threads, {},
              [&](Value j, ValueRange) -> SmallVector<Value> {
                body(j, 1);
                return {};
              });
  }

private:
  GPUKernelEmitter &e;
  Value tid;
  int64_t threads;
  Value scratch;
};
} // namespace

int64_t mlir::rlx::gpuRowThreads(GPUKernelEmitter &e, int64_t n) {
  int64_t limit = std::min<int64_t>(256, e.target.maxInvocations);
  int64_t t =
      std::max<int64_t>(32, llvm::PowerOf2Ceil(std::max<int64_t>(n, 1)));
  return std::min<int64_t>(
      t, static_cast<int64_t>(llvm::bit_floor(static_cast<uint64_t>(limit))));
}

void GPUKernelEmitter::forEachRow(const KernelView &like,
                                  ArrayRef<KernelView> views,
                                  function_ref<void(RowScope &)> body) {
  int64_t n = like.shape.empty() ? 1 : like.shape.back();
  ArrayRef<int64_t> outerShape = ArrayRef<int64_t>(like.shape).drop_back();
  int64_t rows = 1;
  for (int64_t d : outerShape)
    rows *= d;
  int64_t threads = gpuRowThreads(*this, n);
  Value scratch = sharedAlloc({threads}, like.elementType);
  forEachWorkgroupItem(rows, threads, [&](Value row, Value tid) {
    GPURow r(*this, tid, threads, scratch);
    r.outer = delinearize(row, outerShape);
    r.n = n;
    body(r);
  });
}

void GPUKernelEmitter::forEachPosition(
    ArrayRef<int64_t> shape, int64_t,
    function_ref<void(ValueRange coords)> body) {
  int64_t positions = 1;
  for (int64_t d : shape)
    positions *= d;
  forEachElement(positions, [&](Value i) { body(delinearize(i, shape)); });
}

void GPUKernelEmitter::serial(function_ref<void()> body) {
  launch1D(1, 1);
  body();
}

Value GPUKernelEmitter::load(const KernelView &view, ValueRange indices,
                             int64_t width) {
  assert(width == 1 && "SPIR-V kernels load one element at a time");
  return load(view, indices);
}

void GPUKernelEmitter::store(Value value, const KernelView &view,
                             ValueRange indices, int64_t width) {
  assert(width == 1 && "SPIR-V kernels store one element at a time");
  store(value, view, indices);
}

LogicalResult GPUKernelEmitter::emitTargetKernel(Operation *op,
                                                 ArrayRef<KernelView> ins,
                                                 const KernelView &out) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<mir::DequantizeOp, mir::GatherOp>(
          [&](Operation *) -> LogicalResult {
            // Only ggml blocks come here (isTargetKernelOp), and the loads
            // decode every type: a gather is a gather, a dequantize a copy
            // over the [N, K] weight.
            if (isa<mir::GatherOp>(op))
              return emitDataMovementKernel(*this, op, ins, out);
            const KernelView &in = ins[0];
            if (in.rank() != 2 || out.rank() != 2)
              return op->emitOpError("dequantizes [N, K] weights only");
            int64_t cols = in.shape[1];
            forEachElement(in.shape[0] * cols, [&](Value i) {
              SmallVector<Value> at = {divConst(i, cols), remConst(i, cols)};
              store(load(in, at), out, at);
            });
            return success();
          })
      .Case<mir::MatmulOp, mir::BatchMatmulOp, mir::FusedMatmulOp>(
          [&](Operation *) { return emitGPUMatmulKernel(*this, op, ins, out); })
      .Case<mir::AttentionOp>([&](Operation *) {
        return emitGPUAttentionKernel(*this, op, ins, out);
      })
      .Case<mir::RopeOp>(
          [&](Operation *) { return emitGPURopeKernel(*this, op, ins, out); })
      .Default([&](Operation *) {
        return emitGPUReduceKernel(*this, op, ins, out);
      });
}
